"""A local fake of OpenAI's Files and Batches endpoints, on 127.0.0.1, for `--submit`.

`POST /v1/files` keeps an uploaded file; `POST /v1/batches` creates a batch of one;
`GET /v1/batches/ID` says `in_progress` for its first `polls_before_end` looks, then ends
it: processed by tests/drivers/batch_api.py (`expire_after`: the batch expires with only
that many done; `fail`: requests that fail), with an output and an error file; `GET
/v1/files/ID/content` gives a file. Every request needs `Authorization: Bearer KEY`.
"""

from __future__ import annotations

import contextlib
import email.parser
import email.policy
import json
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.drivers.batch_api import Processed, process
from tests.drivers.judge_server import POLL_SECONDS


class BatchServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, key: str, directory: Path) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.key = key
        self.directory = directory
        self.lock = threading.Lock()
        self.files: dict[str, Path] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.polls: dict[str, int] = {}
        self.polls_before_end = 1
        self.expire_after: int | None = None
        self.fail: frozenset[int] = frozenset()
        self.seen = Processed()
        self.requests: list[str] = []  # "METHOD PATH" of each

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def end(self, batch: dict[str, Any]) -> None:
        input_path = self.files[batch["input_file_id"]]
        output, errors = (self.directory / f"{batch['id']}-{n}.jsonl" for n in ("out", "err"))
        process(input_path, output, errors, self.fail, self.expire_after, self.seen)
        total = len(input_path.read_bytes().splitlines())
        expired = self.expire_after is not None and self.expire_after < total
        batch["status"] = "expired" if expired else "completed"
        for name, path in (("output_file_id", output), ("error_file_id", errors)):
            file_id = f"file-{len(self.files)}"
            self.files[file_id] = path
            batch[name] = file_id if path.stat().st_size else None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: BatchServer

    def log_message(self, *_args: Any) -> None:
        pass

    def _authorized(self) -> bool:
        with self.server.lock:
            self.server.requests.append(f"{self.command} {self.path}")
        if self.headers.get("Authorization") == f"Bearer {self.server.key}":
            return True
        self._send(401, {"error": {"message": "bad key"}})
        return False

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if not self._authorized():
            return
        server = self.server
        with server.lock:
            if self.path == "/v1/files":
                file_id = f"file-{len(server.files)}"
                path = server.directory / f"{file_id}.jsonl"
                path.write_bytes(self._upload(body))
                server.files[file_id] = path
                self._send(200, {"id": file_id, "object": "file", "purpose": "batch"})
            elif self.path == "/v1/batches":
                request = json.loads(body)
                assert request["endpoint"] == "/v1/chat/completions"
                batch_id = f"batch_{len(server.batches)}"
                batch = {
                    "id": batch_id,
                    "object": "batch",
                    "input_file_id": request["input_file_id"],
                    "status": "validating",
                    "output_file_id": None,
                    "error_file_id": None,
                }
                server.batches[batch_id] = batch
                self._send(200, batch)
            else:
                self._send(404, {"error": {"message": "no such path"}})

    def do_GET(self) -> None:
        if not self._authorized():
            return
        server = self.server
        parts = self.path.split("/")
        with server.lock:
            if self.path.startswith("/v1/batches/") and parts[3] in server.batches:
                batch = server.batches[parts[3]]
                server.polls[batch["id"]] = server.polls.get(batch["id"], 0) + 1
                if batch["status"] not in ("completed", "expired"):
                    if server.polls[batch["id"]] > server.polls_before_end:
                        server.end(batch)
                    else:
                        batch["status"] = "in_progress"
                total = len(server.files[batch["input_file_id"]].read_bytes().splitlines())
                counts = {"total": total, "completed": 0, "failed": 0}
                self._send(200, batch | {"request_counts": counts})
            elif self.path.endswith("/content") and parts[3] in server.files:
                data = server.files[parts[3]].read_bytes()
                self._raw(200, data)
            else:
                self._send(404, {"error": {"message": "no such object"}})

    def _upload(self, body: bytes) -> bytes:
        """The `file` part of a multipart/form-data body."""
        head = f"Content-Type: {self.headers['Content-Type']}\r\n\r\n".encode()
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
        fields = {
            part.get_param("name", header="content-disposition"): part
            for part in message.iter_parts()  # type: ignore[attr-defined]
        }
        assert fields["purpose"].get_payload(decode=True) == b"batch"
        return fields["file"].get_payload(decode=True)  # type: ignore[no-any-return]

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        self._raw(status, json.dumps(payload).encode())

    def _raw(self, status: int, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        with contextlib.suppress(OSError):
            self.wfile.write(data)


@contextlib.contextmanager
def running(key: str) -> Iterator[BatchServer]:
    with tempfile.TemporaryDirectory() as directory:
        server = BatchServer(key, Path(directory))
        thread = threading.Thread(target=server.serve_forever, args=(POLL_SECONDS,), daemon=True)
        thread.start()
        try:
            yield server
        finally:
            server.shutdown()
            server.server_close()
            thread.join(10)
