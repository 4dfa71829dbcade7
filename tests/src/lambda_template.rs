//! template.yaml as the emulated stack reads it: the functions' binaries, configuration
//! and variables, the event source mappings' batch sizes, and the whole document for the
//! functions' roles. A test may change it (a permission taken out) before the stack starts.

use crate::lambda_emulator::FunctionConfig;
use serde_norway::Value as Yaml;
use std::path::PathBuf;
use std::time::Duration;

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// template.yaml, parsed.
pub struct Template(Yaml);

impl Template {
    pub fn load() -> Template {
        let path = root().join("template.yaml");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
        Template(serde_norway::from_str(&text).expect("template.yaml is YAML"))
    }

    /// The whole document, for readers of other parts (the functions' roles).
    pub fn yaml(&self) -> &Yaml {
        &self.0
    }

    fn resource(&self, logical_id: &str) -> &Yaml {
        let resource = &self.0["Resources"][logical_id];
        assert!(
            !resource.is_null(),
            "template.yaml has no resource {logical_id}"
        );
        resource
    }

    /// The template without the policy statement `sid` of `function`'s role: what a
    /// deploy missing that permission would have.
    pub fn without_statement(mut self, function: &str, sid: &str) -> Template {
        fn remove(value: &mut Yaml, sid: &str) -> bool {
            match value {
                Yaml::Sequence(items) => {
                    let before = items.len();
                    items.retain(|item| item.get("Sid").and_then(Yaml::as_str) != Some(sid));
                    items.len() < before || items.iter_mut().any(|item| remove(item, sid))
                }
                Yaml::Mapping(map) => map.values_mut().any(|v| remove(v, sid)),
                Yaml::Tagged(tagged) => remove(&mut tagged.value, sid),
                _ => false,
            }
        }
        let policies = &mut self.0["Resources"][function]["Properties"]["Policies"];
        assert!(remove(policies, sid), "{function} has no statement {sid}");
        self
    }

    /// The function's binary (`BuildProperties.Binary`) and its Lambda configuration.
    pub fn function(&self, logical_id: &str) -> (String, FunctionConfig) {
        let resource = self.resource(logical_id);
        let binary = resource["Metadata"]["BuildProperties"]["Binary"]
            .as_str()
            .unwrap_or_else(|| panic!("{logical_id}: no BuildProperties.Binary"))
            .to_string();
        let number = |key: &str| {
            resource["Properties"][key]
                .as_u64()
                .or_else(|| self.0["Globals"]["Function"][key].as_u64())
                .unwrap_or_else(|| panic!("{logical_id}: no {key}"))
        };
        let config = FunctionConfig {
            name: binary.clone(),
            memory_mb: number("MemorySize") as u32,
            timeout: Duration::from_secs(number("Timeout")),
        };
        (binary, config)
    }

    /// The variables the template sets on this function itself (beyond the Globals).
    pub fn function_variables(&self, logical_id: &str) -> Vec<String> {
        keys(&self.resource(logical_id)["Properties"]["Environment"]["Variables"])
    }

    /// The variables of `Globals.Function.Environment`.
    pub fn global_variables(&self) -> Vec<String> {
        keys(&self.0["Globals"]["Function"]["Environment"]["Variables"])
    }

    /// The logical ids of every resource.
    pub fn resource_ids(&self) -> Vec<String> {
        keys(&self.0["Resources"])
    }

    /// What an `AWS::Events::Rule`'s SQS target sends for the event of `time`: its message
    /// group and body (`InputTemplate` with `<time>` filled in).
    pub fn scheduled_message(&self, rule: &str, time: &str) -> (String, String) {
        let target = &self.resource(rule)["Properties"]["Targets"][0];
        let text = |value: &Yaml, what: &str| {
            value
                .as_str()
                .unwrap_or_else(|| panic!("{rule}: no {what}"))
                .to_string()
        };
        let group = text(&target["SqsParameters"]["MessageGroupId"], "MessageGroupId");
        let body = text(
            &target["InputTransformer"]["InputTemplate"],
            "InputTemplate",
        );
        (group, body.replace("<time>", time))
    }

    /// `BatchSize` of an `AWS::Lambda::EventSourceMapping`.
    pub fn batch_size(&self, mapping: &str) -> i32 {
        self.resource(mapping)["Properties"]["BatchSize"]
            .as_u64()
            .unwrap_or_else(|| panic!("{mapping}: no BatchSize")) as i32
    }
}

/// The keys of a mapping (none for anything else).
fn keys(mapping: &Yaml) -> Vec<String> {
    mapping
        .as_mapping()
        .map(|map| {
            map.keys()
                .filter_map(|k| k.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}
