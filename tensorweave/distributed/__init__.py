"""The distributed runtime: servers, the worker service, the client-side master and the
transport between tasks. Not a TF namespace (its public names, tf.train.Server and
tf.train.ClusterSpec, are gathered by `tensorweave.train`); not to be confused with
`tensorweave.distribute`, which is TF's public `tf.distribute` namespace (cluster resolvers).

  cluster.py    ClusterSpec (tf.train.ClusterSpec), task names, TF_CONFIG, free ports
  server/       tf.train.Server: one task serving its worker service; `python -m` runs one
  worker.py     WorkerService (one task's RPCs) and WorkerClient (calls it, in process or not)
  graphs.py     the graphs registered with a task: per client, limited, leased
  master.py     the client-side master behind Session("grpc://..."): plans and runs steps
  connector.py  how a client reaches a cluster: session targets, connect timeouts, task addresses;
                connect (a Session's master) and reset (Session.reset), all the client layer uses
  channel.py    the transport's client side: requests, replies, pushes, deadlines, dead peers
  transport.py  the transport's server side: the ROUTER socket and its IO thread
  pool.py       the threads a server runs requests on, up to a limit
  sockets.py    what both sides share: ZeroMQ frames, endpoints and socket paths, timeouts
  uds.py        same-host fast path: the transport's frames over a Unix stream socket
  shm.py        same-host large tensors in shared-memory buffers; the Unix socket carries headers
  auth.py       authentication and encryption (ZeroMQ CURVE): keys, the ZAP handler, keygen
  wire.py       message encoding: a msgpack header plus one raw frame per tensor
"""
