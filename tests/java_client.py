"""The AWS DynamoDB Lock Client's (Java) requests, byte for byte, to test that both clients share locks.

Attribute names, types, units and condition expressions are the Java
client's own (AmazonDynamoDBLockClient: ``ACQUIRE_LOCK_THAT_DOESNT_EXIST_PK_CONDITION``,
``PK_EXISTS_AND_IS_RELEASED_CONDITION``, ``PK_EXISTS_AND_RVN_IS_THE_SAME_CONDITION``,
``UPDATE_LEASE_DURATION_AND_RVN``, ``UPDATE_IS_RELEASED``): it writes whole
items with PutItem, heartbeats with UpdateItem, and by default deletes on release.
"""

from __future__ import annotations

import uuid
from typing import Any

NAMES = {"#pk": "key", "#rvn": "recordVersionNumber", "#on": "ownerName", "#ir": "isReleased", "#ld": "leaseDuration"}


class JavaLockClient:
    def __init__(self, dynamodb: Any, table_name: str, owner_name: str = "java-host-1", lease_ms: int = 1000) -> None:
        self.dynamodb, self.table_name, self.owner_name, self.lease_ms = dynamodb, table_name, owner_name, lease_ms
        self.rvn: str | None = None

    def item(self, key: str, data: bytes | None = None) -> dict[str, Any]:
        self.rvn = str(uuid.uuid4())
        item = {
            "key": {"S": key},
            "ownerName": {"S": self.owner_name},
            "leaseDuration": {"S": str(self.lease_ms)},
            "recordVersionNumber": {"S": self.rvn},
        }
        if data is not None:
            item["data"] = {"B": data}
        return item

    def acquire_new(self, key: str, data: bytes | None = None) -> None:
        self.dynamodb.put_item(
            TableName=self.table_name,
            Item=self.item(key, data),
            ConditionExpression="attribute_not_exists(#pk)",
            ExpressionAttributeNames={"#pk": "key"},
        )

    def acquire_released(self, key: str) -> None:
        self.dynamodb.put_item(
            TableName=self.table_name,
            Item=self.item(key),
            ConditionExpression="attribute_exists(#pk) AND #ir = :ir",
            ExpressionAttributeNames={"#pk": "key", "#ir": "isReleased"},
            ExpressionAttributeValues={":ir": {"S": "1"}},
        )

    def take_over(self, key: str, observed_rvn: str) -> None:
        self.dynamodb.put_item(
            TableName=self.table_name,
            Item=self.item(key),
            ConditionExpression="attribute_exists(#pk) AND #rvn = :rvn",
            ExpressionAttributeNames={"#pk": "key", "#rvn": "recordVersionNumber"},
            ExpressionAttributeValues={":rvn": {"S": observed_rvn}},
        )

    def heartbeat(self, key: str) -> None:
        new_rvn = str(uuid.uuid4())
        self.dynamodb.update_item(
            TableName=self.table_name,
            Key={"key": {"S": key}},
            UpdateExpression="SET #ld = :ld, #rvn = :newRvn",
            ConditionExpression="attribute_exists(#pk) AND #rvn = :rvn AND #on = :on",
            ExpressionAttributeNames={k: NAMES[k] for k in ("#pk", "#rvn", "#on", "#ld")},
            ExpressionAttributeValues={
                ":ld": {"S": str(self.lease_ms)},
                ":newRvn": {"S": new_rvn},
                ":rvn": {"S": self.rvn},
                ":on": {"S": self.owner_name},
            },
        )
        self.rvn = new_rvn

    def release(self, key: str, *, delete: bool = True) -> None:
        condition = "attribute_exists(#pk) AND #rvn = :rvn AND #on = :on"
        values = {":rvn": {"S": self.rvn}, ":on": {"S": self.owner_name}}
        names = {k: NAMES[k] for k in ("#pk", "#rvn", "#on")}
        if delete:
            self.dynamodb.delete_item(
                TableName=self.table_name,
                Key={"key": {"S": key}},
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        else:
            self.dynamodb.update_item(
                TableName=self.table_name,
                Key={"key": {"S": key}},
                UpdateExpression="SET #ir = :ir",
                ConditionExpression=condition,
                ExpressionAttributeNames={**names, "#ir": "isReleased"},
                ExpressionAttributeValues={**values, ":ir": {"S": "1"}},
            )
