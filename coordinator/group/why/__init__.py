"""What DescribeWhy tells of a group (the partition side is broker/why/).

Map:

    group_history.py        GroupHistories: each group's recent rebalances (bounded)
    group_facts.py          the hooks the classic coordinator calls at a rebalance's
                            causes, and ``group_why`` (the answer, either protocol)
    consumer_group_facts.py the same for consumer groups: what bumped the group epoch
    reasons.py              the words of each reason
"""
