"""Lookup tables: tables.py (HashTableV2 and its initializers and lookups; tf.lookup,
tf.tables_initializer), mutable_tables.py (MutableHashTable, MutableDenseHashTable: insert,
remove, export; tf.contrib.lookup)."""
