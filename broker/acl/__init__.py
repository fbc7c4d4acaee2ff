"""ACLs as Kafka's ZooKeeper-mode AclAuthorizer: the vocabulary and znode formats
(acl_model), the ZooKeeper-backed cache (acl_store), the rules and admin
operations (authorizer), the ZooKeeper access seam (zk_access), and the authorization
steps several handlers share, as Kafka's AuthHelper (checks)."""
