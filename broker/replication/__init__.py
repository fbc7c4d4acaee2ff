"""Partitions hosted by this broker: leader/follower state, purgatory, replica manager."""
