"""One module per API (``configs`` serves the three config APIs); each registers with
``broker.dispatch.handler``. By family:

    data            produce, fetch, list_offsets, metadata, offset_for_leader_epoch,
                    delete_records, describe_producers
    groups          find_coordinator, join_group, sync_group, heartbeat, leave_group,
                    offset_commit, offset_fetch, offset_delete, describe_groups,
                    list_groups, delete_groups, consumer_group_heartbeat,
                    consumer_group_describe
    transactions    init_producer_id, add_partitions_to_txn, add_offsets_to_txn,
                    txn_offset_commit, end_txn, write_txn_markers,
                    describe_transactions, list_transactions
    admin           create_topics, delete_topics, create_partitions, describe_cluster,
                    configs (Describe/Alter/IncrementalAlterConfigs), elect_leaders,
                    alter_partition_reassignments, list_partition_reassignments,
                    describe_log_dirs, alter_replica_log_dirs, describe_client_quotas,
                    alter_client_quotas
    security        api_versions, sasl_handshake, sasl_authenticate, create_acls,
                    describe_acls, delete_acls, describe_user_scram_credentials,
                    alter_user_scram_credentials
    inter-broker    leader_and_isr, update_metadata, stop_replica, controlled_shutdown,
                    alter_partition
    pybroker        describe_why (DescribeWhy, pybroker's own API)"""
