"""The update path after transport: idempotency (claims, done-markers, liveness), the
security step, routing to observers and handlers, the handler's context, dead letters.
``process.process_update`` is the entry point."""
