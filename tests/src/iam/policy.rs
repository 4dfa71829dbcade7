//! A function's execution role as template.yaml writes it (`Properties.Policies`),
//! resolved against one emulated stack and evaluated as IAM evaluates an identity policy:
//! an explicit deny wins, then any allow; nothing else is allowed.
//!
//! The resolver knows the intrinsics the template uses in policies (`!Ref`, `!GetAtt`,
//! `!Sub`, `!If` over its `Conditions`, `AWS::NoValue`) and the SAM policy templates it
//! uses. Anything else panics with what to add here: a policy the test cannot read must
//! not pass as one that allows nothing, nor as one that allows everything.

use serde_norway::Value as Yaml;
use std::collections::BTreeMap;

/// What the template's intrinsics resolve to in one emulated stack.
#[derive(Debug, Clone, Default)]
pub struct Stack {
    pub region: String,
    pub account: String,
    /// Parameter name to value; parameters not named here take their `Default`.
    pub parameters: BTreeMap<String, String>,
    /// Logical id to what `!Ref` gives: a table's name, a queue's URL, a secret's ARN.
    pub refs: BTreeMap<String, String>,
    /// Logical id to its ARN (`!GetAtt X.Arn`).
    pub arns: BTreeMap<String, String>,
}

/// One function's role: who it is (for messages) and what it may do.
#[derive(Debug, Clone)]
pub struct Policy {
    role: String,
    statements: Vec<Statement>,
}

#[derive(Debug, Clone)]
struct Statement {
    allow: bool,
    actions: Vec<String>,
    resources: Vec<String>,
}

impl Policy {
    /// The role of `function` (a logical id) in `template`, resolved against `stack`.
    pub fn of_function(template: &Yaml, function: &str, stack: &Stack) -> Policy {
        let resolver = Resolver { template, stack };
        let policies = &template["Resources"][function]["Properties"]["Policies"];
        let mut statements = Vec::new();
        for item in policies.as_sequence().into_iter().flatten() {
            for policy in resolver.value(item) {
                statements.extend(resolver.policy(function, &policy));
            }
        }
        Policy {
            role: format!("{function}Role"),
            statements,
        }
    }

    /// A role allowed exactly `grants` (`(action, resource)`), for tests of the checks.
    pub fn allowing(role: &str, grants: &[(&str, &str)]) -> Policy {
        Policy {
            role: role.to_string(),
            statements: grants
                .iter()
                .map(|(action, resource)| Statement {
                    allow: true,
                    actions: vec![action.to_string()],
                    resources: vec![resource.to_string()],
                })
                .collect(),
        }
    }

    pub fn role(&self) -> &str {
        &self.role
    }

    /// Whether the role may perform `action` (`service:Operation`) on `resource` (an ARN).
    pub fn allows(&self, action: &str, resource: &str) -> bool {
        let matching = |s: &&Statement| {
            s.actions
                .iter()
                .any(|a| glob(&a.to_lowercase(), &action.to_lowercase()))
                && s.resources.iter().any(|r| glob(r, resource))
        };
        let relevant: Vec<&Statement> = self.statements.iter().filter(matching).collect();
        relevant.iter().any(|s| s.allow) && !relevant.iter().any(|s| !s.allow)
    }
}

/// IAM's wildcards: `*` any run of characters, `?` one character.
fn glob(pattern: &str, text: &str) -> bool {
    let (pattern, text): (Vec<char>, Vec<char>) =
        (pattern.chars().collect(), text.chars().collect());
    // Iterative match with one backtrack point (the last `*`), linear in practice.
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && (pattern[p] == '?' || pattern[p] == text[t]) {
            p += 1;
            t += 1;
        } else if p < pattern.len() && pattern[p] == '*' {
            star = Some((p, t));
            p += 1;
        } else if let Some((star_p, star_t)) = star {
            p = star_p + 1;
            t = star_t + 1;
            star = Some((star_p, star_t + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|c| *c == '*')
}

struct Resolver<'a> {
    template: &'a Yaml,
    stack: &'a Stack,
}

impl Resolver<'_> {
    /// One entry of `Policies`: an inline document (`Statement: …`) or a SAM policy
    /// template (`AWSSecretsManagerGetSecretValuePolicy: {SecretArn: …}`).
    fn policy(&self, function: &str, policy: &Yaml) -> Vec<Statement> {
        if let Some(statements) = policy.get("Statement") {
            return statements
                .as_sequence()
                .unwrap_or_else(|| panic!("{function}: Statement is not a list"))
                .iter()
                .map(|s| self.statement(function, s))
                .collect();
        }
        let template = policy
            .as_mapping()
            .filter(|m| m.len() == 1)
            .and_then(|m| m.iter().next())
            .and_then(|(name, arguments)| Some((name.as_str()?, arguments)));
        match template {
            Some(("AWSSecretsManagerGetSecretValuePolicy", arguments)) => vec![Statement {
                allow: true,
                actions: vec!["secretsmanager:GetSecretValue".to_string()],
                resources: self.strings(&arguments["SecretArn"]),
            }],
            _ => panic!(
                "{function}: a policy the IAM check cannot read: {policy:?} (add its \
                 expansion to tests/src/iam/policy.rs)"
            ),
        }
    }

    fn statement(&self, function: &str, statement: &Yaml) -> Statement {
        let allow = match statement["Effect"].as_str() {
            Some("Allow") => true,
            Some("Deny") => false,
            other => panic!("{function}: a statement's Effect is {other:?}"),
        };
        for unsupported in ["NotAction", "NotResource", "Condition"] {
            assert!(
                statement.get(unsupported).is_none(),
                "{function}: {unsupported} in a statement is not read by the IAM check"
            );
        }
        Statement {
            allow,
            actions: self.strings(&statement["Action"]),
            resources: self.strings(&statement["Resource"]),
        }
    }

    /// A string or a list of strings, each possibly an intrinsic.
    fn strings(&self, value: &Yaml) -> Vec<String> {
        self.value(value)
            .into_iter()
            .flat_map(|v| match v {
                Yaml::Sequence(items) => items
                    .iter()
                    .flat_map(|item| self.value(item))
                    .map(|item| self.text(&item))
                    .collect::<Vec<_>>(),
                other => vec![self.text(&other)],
            })
            .collect()
    }

    fn text(&self, value: &Yaml) -> String {
        match value {
            Yaml::String(s) => s.clone(),
            other => panic!("expected a string in a policy, found {other:?}"),
        }
    }

    /// `value` with its intrinsics resolved; empty for `!Ref AWS::NoValue`.
    fn value(&self, value: &Yaml) -> Vec<Yaml> {
        if let Some(argument) = intrinsic(value, "If") {
            let parts = argument.as_sequence().filter(|p| p.len() == 3);
            let parts = parts.unwrap_or_else(|| panic!("!If takes three arguments: {argument:?}"));
            let condition = parts[0].as_str().expect("!If names a condition");
            let branch = if self.condition(condition) {
                &parts[1]
            } else {
                &parts[2]
            };
            return self.value(branch);
        }
        if let Some(name) = intrinsic(value, "Ref").and_then(Yaml::as_str) {
            if name == "AWS::NoValue" {
                return Vec::new();
            }
            return vec![Yaml::String(self.reference(name))];
        }
        if let Some(argument) = intrinsic(value, "GetAtt") {
            let dotted = match argument {
                Yaml::String(s) => s.clone(),
                Yaml::Sequence(parts) => parts
                    .iter()
                    .filter_map(Yaml::as_str)
                    .collect::<Vec<_>>()
                    .join("."),
                other => panic!("!GetAtt {other:?}"),
            };
            return vec![Yaml::String(self.attribute(&dotted))];
        }
        if let Some(text) = intrinsic(value, "Sub").and_then(Yaml::as_str) {
            return vec![Yaml::String(self.substitute(text))];
        }
        vec![value.clone()]
    }

    /// `${Name}` and `${Name.Attribute}` of a `!Sub` string.
    fn substitute(&self, text: &str) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let end = rest[start..]
                .find('}')
                .unwrap_or_else(|| panic!("!Sub {text:?}: unclosed ${{"));
            let name = &rest[start + 2..start + end];
            if name.contains('.') && !name.starts_with("AWS::") {
                out.push_str(&self.attribute(name));
            } else {
                out.push_str(&self.reference(name));
            }
            rest = &rest[start + end + 1..];
        }
        out.push_str(rest);
        out
    }

    fn reference(&self, name: &str) -> String {
        match name {
            "AWS::Partition" => return "aws".to_string(),
            "AWS::Region" => return self.stack.region.clone(),
            "AWS::AccountId" => return self.stack.account.clone(),
            _ => {}
        }
        if let Some(value) = self.stack.refs.get(name) {
            return value.clone();
        }
        self.parameter(name)
            .unwrap_or_else(|| panic!("!Ref {name}: not a parameter or a resource the stack knows"))
    }

    fn attribute(&self, dotted: &str) -> String {
        let (id, attribute) = dotted.split_once('.').unwrap_or((dotted, ""));
        assert_eq!(attribute, "Arn", "!GetAtt {dotted}: only Arn is resolved");
        self.stack
            .arns
            .get(id)
            .cloned()
            .unwrap_or_else(|| panic!("!GetAtt {dotted}: the stack has no ARN for {id}"))
    }

    fn parameter(&self, name: &str) -> Option<String> {
        if let Some(value) = self.stack.parameters.get(name) {
            return Some(value.clone());
        }
        let declared = &self.template["Parameters"][name];
        if declared.is_null() {
            return None;
        }
        Some(match &declared["Default"] {
            Yaml::String(s) => s.clone(),
            Yaml::Number(n) => n.to_string(),
            Yaml::Bool(b) => b.to_string(),
            _ => String::new(),
        })
    }

    /// A named condition of the template's `Conditions`.
    fn condition(&self, name: &str) -> bool {
        let definition = &self.template["Conditions"][name];
        assert!(
            !definition.is_null(),
            "no condition {name} in template.yaml"
        );
        self.truth(definition)
    }

    fn truth(&self, value: &Yaml) -> bool {
        if let Some(argument) = intrinsic(value, "Equals") {
            let sides: Vec<String> = argument
                .as_sequence()
                .filter(|s| s.len() == 2)
                .unwrap_or_else(|| panic!("!Equals takes two values: {argument:?}"))
                .iter()
                .map(|side| match self.value(side).as_slice() {
                    [Yaml::String(s)] => s.clone(),
                    [Yaml::Number(n)] => n.to_string(),
                    [Yaml::Bool(b)] => b.to_string(),
                    other => panic!("!Equals side {other:?}"),
                })
                .collect();
            return sides[0] == sides[1];
        }
        if let Some(argument) = intrinsic(value, "Not") {
            let inner = argument.as_sequence().and_then(|s| s.first());
            return !self.truth(inner.unwrap_or_else(|| panic!("!Not [{argument:?}]")));
        }
        for (name, all) in [("And", true), ("Or", false)] {
            if let Some(argument) = intrinsic(value, name) {
                let mut each = argument.as_sequence().into_iter().flatten();
                return if all {
                    each.all(|c| self.truth(c))
                } else {
                    each.any(|c| self.truth(c))
                };
            }
        }
        if let Some(name) = intrinsic(value, "Condition").and_then(Yaml::as_str) {
            return self.condition(name);
        }
        panic!("a condition the IAM check cannot evaluate: {value:?}")
    }
}

/// The argument of `!Name x` (short form) or `{Fn::Name: x}` / `{Ref: x}` (long form).
fn intrinsic<'a>(value: &'a Yaml, name: &str) -> Option<&'a Yaml> {
    match value {
        Yaml::Tagged(tagged) if tagged.tag == name => Some(&tagged.value),
        Yaml::Mapping(map) if map.len() == 1 => {
            let long = if name == "Ref" || name == "Condition" {
                name.to_string()
            } else {
                format!("Fn::{name}")
            };
            map.get(long.as_str())
        }
        _ => None,
    }
}

/// The template's parameters as the functions' environment shows them: a variable
/// written `!Ref P` (or `!If [C, !Ref P, !Ref AWS::NoValue]`) holds P's value.
pub fn parameters_from_environment(
    template: &Yaml,
    functions: &[&str],
    environment: &[(String, String)],
) -> BTreeMap<String, String> {
    let mut declared: Vec<&Yaml> =
        vec![&template["Globals"]["Function"]["Environment"]["Variables"]];
    for function in functions {
        declared.push(&template["Resources"][*function]["Properties"]["Environment"]["Variables"]);
    }
    let mut parameters = BTreeMap::new();
    for variables in declared {
        for (name, value) in variables.as_mapping().into_iter().flatten() {
            let Some(name) = name.as_str() else { continue };
            let referenced = intrinsic(value, "Ref").or_else(|| {
                let branches = intrinsic(value, "If")?.as_sequence()?;
                intrinsic(branches.get(1)?, "Ref")
            });
            let Some(parameter) = referenced.and_then(Yaml::as_str) else {
                continue;
            };
            if template["Parameters"][parameter].is_null() {
                continue;
            }
            if let Some((_, value)) = environment.iter().find(|(k, _)| k == name) {
                parameters.insert(parameter.to_string(), value.clone());
            }
        }
    }
    parameters
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_match_as_iam_does() {
        assert!(glob("dynamodb:*", "dynamodb:PutItem"));
        assert!(glob(
            "arn:aws:bedrock:*::foundation-model/*",
            "arn:aws:bedrock:us-east-1::foundation-model/x"
        ));
        assert!(glob("a?c", "abc"));
        assert!(!glob("arn:table/a", "arn:table/a/index/b"));
        assert!(!glob("dynamodb:Get*", "dynamodb:PutItem"));
    }

    #[test]
    fn a_deny_wins_over_an_allow() {
        let mut policy = Policy::allowing("r", &[("sqs:*", "*")]);
        policy.statements.push(Statement {
            allow: false,
            actions: vec!["sqs:DeleteMessage".to_string()],
            resources: vec!["*".to_string()],
        });
        assert!(policy.allows("sqs:SendMessage", "arn:q"));
        assert!(!policy.allows("sqs:DeleteMessage", "arn:q"));
        assert!(
            policy.allows("SQS:sendmessage", "arn:q"),
            "actions are case-insensitive"
        );
    }
}
