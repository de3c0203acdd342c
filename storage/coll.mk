# storage/coll.mk: typed storage of the collection types.
