"""A round-robin TCP proxy for the scale-out sketch of ``bench/run.py``: each accepted
connection goes to the next backend, and bytes are copied both ways until either side closes
(keep-alive connections stay on one backend, as behind a layer-4 balancer).

    python bench/proxy.py PORT BACKEND_PORT [BACKEND_PORT ...]
"""

from __future__ import annotations

import asyncio
import itertools
import sys


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        writer.close()


async def main(port: int, backends: list[int]) -> None:
    turn = itertools.cycle(backends)

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", next(turn))
        except OSError:
            writer.close()
            return
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    server = await asyncio.start_server(accept, "127.0.0.1", port)
    print(f"proxy on {port} -> {backends}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), [int(port) for port in sys.argv[2:]]))
