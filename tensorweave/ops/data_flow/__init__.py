"""Queues and gradient accumulators: state that lives on one task, shared by name, that
kernels may block on.

waiting.py           Waitable: one lock per resource, a condition per kind of attempt; blocked
                     attempts served in arrival order, woken only when what they wait for is
                     there, waiting in short slices that honour the step's cancellation and
                     deadline (StepContext)
queue_resources.py   the queues' storage: FIFO, random shuffle, padding FIFO, priority
queue_ops.py         the queue ops (FIFOQueueV2, QueueEnqueueV2, QueueDequeueManyV2, ...)
queues.py            tf.QueueBase, tf.FIFOQueue, tf.RandomShuffleQueue, tf.PaddingFIFOQueue,
                     tf.PriorityQueue
accumulators.py      tf.ConditionalAccumulator, tf.SparseConditionalAccumulator and their ops
"""
