"""DescribeCluster (API key 60), versions 0-1, flexible from 0.

Brokers, controller and cluster ID (KIP-700). v1 adds EndpointType (1 = broker,
2 = controller; KIP-919) to both sides.
"""

from protocol.schema import field, message

REQUEST = message("DescribeClusterRequest", api_key=60, valid="0-1", flexible="0+", fields=[
    field("IncludeClusterAuthorizedOperations", "bool", "0+"),
    field("EndpointType", "int8", "1+", default=1),
])

RESPONSE = message("DescribeClusterResponse", api_key=60, valid="0-1", flexible="0+", fields=[
    field("ThrottleTimeMs", "int32", "0+"),
    field("ErrorCode", "int16", "0+"),
    field("ErrorMessage", "string", "0+", nullable="0+", default=None),
    field("EndpointType", "int8", "1+", default=1),
    field("ClusterId", "string", "0+"),
    field("ControllerId", "int32", "0+", default=-1),
    field("Brokers", "[]DescribeClusterBroker", "0+", fields=[
        field("BrokerId", "int32", "0+"),
        field("Host", "string", "0+"),
        field("Port", "int32", "0+"),
        field("Rack", "string", "0+", nullable="0+", default=None),
    ]),
    field("ClusterAuthorizedOperations", "int32", "0+", default=-2147483648),
])
