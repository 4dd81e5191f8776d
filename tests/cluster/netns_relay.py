"""A TCP relay that delays every byte by a fixed time in each direction: a slow link where
the kernel has no netem (netns.py splices it in with an nftables DNAT rule).

    python netns_relay.py LISTEN_HOST LISTEN_PORT TARGET_HOST TARGET_PORT ONE_WAY_MS

Prints "RELAYING <port>" once it listens (LISTEN_PORT 0: a free one), then serves until
killed. Order is kept; the delay is added to whatever the links already take.
"""
from __future__ import annotations

import asyncio
import sys


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay_s: float) -> None:
    loop = asyncio.get_running_loop()
    pending: asyncio.Queue = asyncio.Queue()

    async def deliver() -> None:
        while True:
            due, data = await pending.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if data is None:
                break
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()

    sender = asyncio.create_task(deliver())
    try:
        while data := await reader.read(1 << 16):
            pending.put_nowait((loop.time() + delay_s, data))
    except ConnectionError:
        pass
    pending.put_nowait((loop.time() + delay_s, None))
    try:
        await sender
    except ConnectionError:
        pass


async def main(listen_host: str, listen_port: int, target_host: str, target_port: int, delay_s: float) -> None:
    async def serve(client_r, client_w):
        try:
            target_r, target_w = await asyncio.open_connection(target_host, target_port)
        except OSError:
            client_w.close()
            return
        await asyncio.gather(_pipe(client_r, target_w, delay_s), _pipe(target_r, client_w, delay_s))
        client_w.close()
        target_w.close()

    server = await asyncio.start_server(serve, listen_host, listen_port)
    print(f"RELAYING {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    host, port, target, target_port, one_way_ms = sys.argv[1:6]
    asyncio.run(main(host, int(port), target, int(target_port), float(one_way_ms) / 1000.0))
