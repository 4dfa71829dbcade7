"""Create template.yaml's DynamoDB tables and SQS queues in a local emulator (moto).

Reads the resources straight from template.yaml, so the local tables have exactly the key
schemas, GSIs, LSIs, TTL attribute and queue settings (FIFO, visibility timeout, redrive to the
DLQ) that the deployed stack has. Talks to whatever AWS_ENDPOINT_URL points at (refuses to
run without it, so it never touches a real account) and prints `export NAME=value` lines
for the environment variables the functions read (PARLEY_*_TABLE, PARLEY_*_QUEUE_URL, ...).

    eval "$(.venv/bin/python scripts/provision_moto.py --stack-name parley-local)"

scripts/moto.sh --provision does this for you; scripts/test.sh runs it as a check that the
template's tables and queues are accepted by the DynamoDB and SQS APIs.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path

import boto3
from botocore.exceptions import ClientError
from samtranslator.yaml_helper import yaml_parse

ROOT = Path(__file__).resolve().parent.parent


def sub(value, stack: str):
    """Resolve the few intrinsics the tables and queues use."""
    if isinstance(value, dict) and "Fn::Sub" in value:
        text = value["Fn::Sub"]
        if not isinstance(text, str):
            raise SystemExit(f"unsupported Fn::Sub form: {value!r}")
        return text.replace("${AWS::StackName}", stack)
    return value


def create_table(ddb, logical_id: str, props: dict, stack: str) -> str:
    name = props.get("TableName") or f"{stack}-{logical_id.removesuffix('Table')}"
    name = sub(name, stack)
    request = {
        "TableName": name,
        "AttributeDefinitions": props["AttributeDefinitions"],
        "KeySchema": props["KeySchema"],
        "BillingMode": props.get("BillingMode", "PROVISIONED"),
    }
    if props.get("LocalSecondaryIndexes"):
        request["LocalSecondaryIndexes"] = [
            {k: lsi[k] for k in ("IndexName", "KeySchema", "Projection")}
            for lsi in props["LocalSecondaryIndexes"]
        ]
    if props.get("GlobalSecondaryIndexes"):
        request["GlobalSecondaryIndexes"] = [
            {k: gsi[k] for k in ("IndexName", "KeySchema", "Projection")}
            for gsi in props["GlobalSecondaryIndexes"]
        ]
    try:
        ddb.create_table(**request)
    except ClientError as err:
        if err.response["Error"]["Code"] != "ResourceInUseException":
            raise
    ttl = props.get("TimeToLiveSpecification")
    if ttl and ttl.get("Enabled"):
        ddb.update_time_to_live(
            TableName=name,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": ttl["AttributeName"]},
        )
    return name


QUEUE_ATTRIBUTES = (
    "FifoQueue",
    "ContentBasedDeduplication",
    "DeduplicationScope",
    "FifoThroughputLimit",
    "VisibilityTimeout",
    "MessageRetentionPeriod",
    "DelaySeconds",
    "ReceiveMessageWaitTimeSeconds",
)


def attribute(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def parameter_default(value, parameters: dict):
    """A literal, or the default of the template parameter a `!Ref` names."""
    if isinstance(value, dict) and "Ref" in value:
        name = value["Ref"]
        if name not in parameters or "Default" not in parameters[name]:
            raise SystemExit(f"!Ref {name}: no such parameter with a default")
        return parameters[name]["Default"]
    return value


def create_queues(sqs, queues: dict, stack: str, parameters: dict) -> dict[str, tuple[str, str]]:
    """Creates dead-letter queues before the queues that redrive into them."""
    created: dict[str, tuple[str, str]] = {}  # logical id -> (url, arn)

    def create(logical_id: str):
        if logical_id in created:
            return created[logical_id]
        props = queues[logical_id]
        attributes = {k: attribute(props[k]) for k in QUEUE_ATTRIBUTES if k in props}
        redrive = props.get("RedrivePolicy")
        if redrive:
            target = redrive["deadLetterTargetArn"]
            if not (isinstance(target, dict) and "Fn::GetAtt" in target):
                raise SystemExit(f"{logical_id}: deadLetterTargetArn must be a GetAtt")
            dlq = target["Fn::GetAtt"]
            dlq = dlq[0] if isinstance(dlq, list) else dlq.split(".")[0]
            attributes["RedrivePolicy"] = json.dumps(
                {"deadLetterTargetArn": create(dlq)[1], "maxReceiveCount": parameter_default(redrive["maxReceiveCount"], parameters)}
            )
        name = sub(props.get("QueueName") or f"{stack}-{logical_id}", stack)
        if props.get("FifoQueue") and not name.endswith(".fifo"):
            name += ".fifo"
        url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        created[logical_id] = (url, arn)
        return created[logical_id]

    for logical_id in queues:
        create(logical_id)
    return created


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--template", default=str(ROOT / "template.yaml"))
    parser.add_argument("--stack-name", default="parley-local")
    args = parser.parse_args()

    if not os.environ.get("AWS_ENDPOINT_URL"):
        print("AWS_ENDPOINT_URL is not set; refusing to provision a real AWS account", file=sys.stderr)
        return 2

    template = yaml_parse(Path(args.template).read_text())
    resources = template["Resources"]
    tables = {k: v["Properties"] for k, v in resources.items() if v["Type"] == "AWS::DynamoDB::Table"}
    queues = {k: v["Properties"] for k, v in resources.items() if v["Type"] == "AWS::SQS::Queue"}

    ddb = boto3.client("dynamodb")
    sqs = boto3.client("sqs")
    refs: dict[str, str] = {}
    for logical_id, props in tables.items():
        refs[logical_id] = create_table(ddb, logical_id, props, args.stack_name)
    for logical_id, (url, _arn) in create_queues(sqs, queues, args.stack_name, template.get("Parameters", {})).items():
        refs[logical_id] = url

    # The functions' environment, as the template wires it: literals and Refs to the
    # resources just created. Parameters and secrets are left to the caller.
    variables = template.get("Globals", {}).get("Function", {}).get("Environment", {}).get("Variables", {})
    for name, value in variables.items():
        if isinstance(value, str):
            print(f"export {name}={shlex.quote(value)}")
        elif isinstance(value, dict) and value.get("Ref") in refs:
            print(f"export {name}={shlex.quote(refs[value['Ref']])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
