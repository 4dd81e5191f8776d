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
  transport.py  the transport's server side: the IO role over every transport's listener
  transports.py the transport seam: the protocol a transport implements, the registry, the choice
  zeromq.py     transport: ZeroMQ tcp:// (and ipc://), every peer
  uds.py        transport: a Unix stream socket, same-host peers
  inproc.py     transport: socket pairs within one process (TENSORWEAVE_TRANSPORT=inproc, tests)
  pool.py       the threads a server runs requests on, up to a limit
  sockets.py    what every side shares: message shapes, ZeroMQ frames, endpoints and paths, timeouts
  shm.py        same-host large tensors in shared-memory buffers; the Unix socket carries headers
  arena.py      a collective job's large arrays in a shared memfd (numpy's allocation policy,
                _arena.c), where the other members of an all-reduce on the host read them
  auth.py       authentication and encryption (ZeroMQ CURVE): keys, the ZAP handler, keygen, revocation,
                the same-host proof of key
  wire.py       message encoding: a msgpack header plus one raw frame per tensor
"""
