"""Constants shared by the Protobuf wire check and its numba kernel (a module of their own so
the kernel need not import the module that imports it)."""

DENSE = 64  # field numbers below this are looked up in a dense table per message type
MAX_DEPTH = 100  # protobuf's default recursion limit
