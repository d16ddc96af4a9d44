"""TCP forwarder from the host network namespace into the cluster's.

Started inside the cluster's network namespace with a listening socket that was created (and bound to 127.0.0.1)
in the host namespace and passed down as a file descriptor. A socket keeps the namespace it was created in, so
host clients connect to 127.0.0.1:<port> and this process relays each connection to the apiserver inside.
"""

from __future__ import annotations

import argparse
import asyncio
import socket


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def _serve(listener: socket.socket, host: str, port: int) -> None:
    async def relay(client_reader, client_writer):
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(host, port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(_pipe(client_reader, upstream_writer), _pipe(upstream_reader, client_writer))

    server = await asyncio.start_server(relay, sock=listener)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fd", type=int, required=True, help="inherited listening socket")
    parser.add_argument("--to", required=True, help="HOST:PORT inside this network namespace")
    args = parser.parse_args()
    host, port = args.to.rsplit(":", 1)
    listener = socket.socket(fileno=args.fd)
    asyncio.run(_serve(listener, host, int(port)))


if __name__ == "__main__":
    main()
