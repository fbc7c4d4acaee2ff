"""DeleteTopics (API key 20), versions 0-6, flexible from 4 (v0 deprecated in Kafka).

v0-3 share one request layout (v1 adds ThrottleTimeMs to the response, v2 answers
before throttling, v3 may return TOPIC_DELETION_DISABLED); v4 goes flexible; v5
adds a per-topic ErrorMessage and may return THROTTLING_QUOTA_EXCEEDED (KIP-599);
v6 replaces the TopicNames string array with Topics entries carrying a nullable
name and a TopicId, and the response carries TopicId with a nullable Name (KIP-516).
"""

from protocol.schema import field, message

REQUEST = message("DeleteTopicsRequest", api_key=20, valid="0-6", flexible="4+", fields=[
    field("Topics", "[]DeleteTopicState", "6+", fields=[
        field("Name", "string", "6+", nullable="6+", default=None),
        field("TopicId", "uuid", "6+"),
    ]),
    field("TopicNames", "[]string", "0-5", ignorable=True),
    field("TimeoutMs", "int32", "0+"),
])

RESPONSE = message("DeleteTopicsResponse", api_key=20, valid="0-6", flexible="4+", fields=[
    field("ThrottleTimeMs", "int32", "1+", ignorable=True),
    field("Responses", "[]DeletableTopicResult", "0+", fields=[
        field("Name", "string", "0+", nullable="6+"),
        field("TopicId", "uuid", "6+", ignorable=True),
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "5+", nullable="5+", default=None, ignorable=True),
    ]),
])
