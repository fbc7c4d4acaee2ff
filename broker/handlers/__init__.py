"""One module per API family; each registers with ``broker.dispatch.handler``."""
