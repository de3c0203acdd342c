# server/coll.mk: command handlers of the collection types.
