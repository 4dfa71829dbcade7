//! The functions' roles in template.yaml, read without a stack: what the SQS event source
//! mappings do with each worker's role. What the functions' own code calls is checked on
//! every Lambda-path test (`parley_tests::iam`: each function reaches moto through its
//! role), see lambda_deployed.rs.

use parley_tests::iam::{EVENT_SOURCE_ACTIONS, Policy, Stack};
use parley_tests::lambda_stack::Template;
use serde_norway::Value as Yaml;

/// Every resource of the template under a made-up name and ARN, and every parameter at
/// its default: enough to resolve the roles.
fn made_up_stack(template: &Template) -> Stack {
    let ids = template.resource_ids();
    Stack {
        region: "eu-west-1".to_string(),
        account: "111122223333".to_string(),
        parameters: Default::default(),
        refs: ids
            .iter()
            .map(|id| (id.clone(), format!("ref-of-{id}")))
            .collect(),
        arns: ids
            .iter()
            .map(|id| {
                (
                    id.clone(),
                    format!("arn:aws:test:eu-west-1:111122223333:{id}"),
                )
            })
            .collect(),
    }
}

/// `(mapping, function, queue ARN)` of every `AWS::Lambda::EventSourceMapping`.
fn mappings(template: &Yaml, stack: &Stack) -> Vec<(String, String, String)> {
    let get_att = |value: &Yaml| match value {
        Yaml::Tagged(tagged) if tagged.tag == "GetAtt" => tagged
            .value
            .as_str()
            .and_then(|dotted| dotted.strip_suffix(".Arn"))
            .map(str::to_string),
        _ => None,
    };
    let reference = |value: &Yaml| match value {
        Yaml::Tagged(tagged) if tagged.tag == "Ref" => tagged.value.as_str().map(str::to_string),
        _ => None,
    };
    template["Resources"]
        .as_mapping()
        .expect("Resources")
        .iter()
        .filter(|(_, r)| r["Type"].as_str() == Some("AWS::Lambda::EventSourceMapping"))
        .map(|(id, r)| {
            let id = id.as_str().unwrap_or_default().to_string();
            let queue = get_att(&r["Properties"]["EventSourceArn"])
                .unwrap_or_else(|| panic!("{id}: EventSourceArn is not a !GetAtt X.Arn"));
            let function = reference(&r["Properties"]["FunctionName"])
                .unwrap_or_else(|| panic!("{id}: FunctionName is not a !Ref"));
            (id, function, stack.arns[&queue].clone())
        })
        .collect()
}

/// The mappings that template.yaml's roles fail to serve, as `mapping: action on queue`.
fn unserved(template: &Template) -> Vec<String> {
    let stack = made_up_stack(template);
    let mut unserved = Vec::new();
    for (mapping, function, queue) in mappings(template.yaml(), &stack) {
        let role = Policy::of_function(template.yaml(), &function, &stack);
        for action in EVENT_SOURCE_ACTIONS {
            if !role.allows(action, &queue) {
                unserved.push(format!(
                    "{mapping}: {} may not {action} on {queue}",
                    role.role()
                ));
            }
        }
    }
    unserved
}

#[test]
fn every_event_source_mapping_may_receive_and_delete_with_its_functions_role() {
    let template = Template::load();
    assert_eq!(
        mappings(template.yaml(), &made_up_stack(&template)).len(),
        3,
        "the conversation, review and embedding queues"
    );
    assert_eq!(unserved(&template), Vec::<String>::new());

    // The check reads the roles: without the review worker's statement for its queues,
    // both of its mappings go unserved.
    let missing =
        unserved(&Template::load().without_statement("ReviewWorkerFunction", "ConsumeOwnQueue"));
    assert_eq!(missing.len(), 6, "{missing:#?}");
    assert!(
        missing.iter().any(|m| m.starts_with(
            "ReviewWorkerEmbeddingQueueMapping: ReviewWorkerFunctionRole may not sqs:ReceiveMessage"
        )),
        "{missing:#?}"
    );
}
