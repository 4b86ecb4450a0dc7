#!/usr/bin/env python3
"""Opens a `ptefs report` page in headless Chromium and prints what the
browser saw, as JSON: console errors and uncaught exceptions, each treemap
rectangle's rendered area (SVG units) with its data-bytes, the drawing's
area, and the first cell of every row of every table; and saves a
screenshot.

    scripts/browser-check.py PAGE.html SCREENSHOT.png [WIDTH HEIGHT]

Chromium is driven over its DevTools protocol (pip's `websockets`), with
no network: the page is opened from disk. Exit status 3 when chromium or
websockets is missing (tests skip loudly then, or fail under
PTEFS_REQUIRE_ALL=1), 1 on any other failure.
"""

import asyncio
import base64
import json
import os
import signal
import shutil
import subprocess
import sys
import tempfile
import urllib.request

try:
    import websockets
except ImportError:
    print("websockets is not installed (scripts/setup.sh installs it)", file=sys.stderr)
    sys.exit(3)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

MEASURE = r"""
(() => {
  const svg = document.querySelector('svg.treemap');
  const box = svg.getBBox();
  const vb = svg.viewBox.baseVal;
  const rects = Array.from(svg.querySelectorAll('rect[data-bytes]')).map(r => {
    const b = r.getBBox();
    return {bytes: Number(r.dataset.bytes), kind: r.dataset.kind, area: b.width * b.height,
            title: r.querySelector('title') ? r.querySelector('title').textContent : null};
  });
  const tables = {};
  document.querySelectorAll('table').forEach(t => {
    tables[t.id] = Array.from(t.tBodies[0].rows).map(r => r.cells[0].textContent);
  });
  return JSON.stringify({area: vb.width * vb.height, rects, tables,
                         title: document.title});
})()
"""


async def run(page, shot, width, height):
    # Chromium's helper processes may still be writing to the profile as it
    # is removed: the browser runs in a process group of its own that is
    # killed whole, and what is left of the profile is not an error.
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        proc = subprocess.Popen(
            [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions",
             "--disable-background-networking", "--disable-component-update",
             f"--user-data-dir={profile}", "--remote-debugging-port=0", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            start_new_session=True)
        try:
            port = None
            for line in proc.stderr:
                if "DevTools listening on ws://" in line:
                    port = line.split("ws://")[1].split("/")[0].split(":")[1]
                    break
            if port is None:
                raise RuntimeError("chromium did not start its DevTools endpoint")
            targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list"))
            ws_url = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
            async with websockets.connect(ws_url, max_size=64 << 20) as ws:
                ids = iter(range(1, 1 << 30))
                errors = []
                pending = {}

                async def call(method, **params):
                    i = next(ids)
                    await ws.send(json.dumps({"id": i, "method": method, "params": params}))
                    while True:
                        msg = json.loads(await ws.recv())
                        if msg.get("id") == i:
                            if "error" in msg:
                                raise RuntimeError(f"{method}: {msg['error']}")
                            return msg.get("result", {})
                        note(msg)

                def note(msg):
                    m, p = msg.get("method"), msg.get("params", {})
                    if m == "Runtime.exceptionThrown":
                        errors.append(p["exceptionDetails"].get("text", "exception"))
                    elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                        errors.append(" ".join(str(a.get("value", a.get("description"))) for a in p["args"]))
                    elif m == "Log.entryAdded" and p["entry"].get("level") == "error":
                        errors.append(p["entry"].get("text", ""))
                    elif m == "Page.loadEventFired":
                        pending["loaded"] = True

                await call("Runtime.enable")
                await call("Log.enable")
                await call("Page.enable")
                await call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                           deviceScaleFactor=1, mobile=False)
                await call("Page.navigate", url="file://" + os.path.abspath(page))
                while "loaded" not in pending:
                    note(json.loads(await asyncio.wait_for(ws.recv(), 60)))
                # Let late console messages arrive.
                try:
                    while True:
                        note(json.loads(await asyncio.wait_for(ws.recv(), 0.5)))
                except asyncio.TimeoutError:
                    pass
                res = await call("Runtime.evaluate", expression=MEASURE, returnByValue=True)
                if "exceptionDetails" in res:
                    raise RuntimeError(f"measuring failed: {res['exceptionDetails']}")
                seen = json.loads(res["result"]["value"])
                img = await call("Page.captureScreenshot", format="png")
                with open(shot, "wb") as f:
                    f.write(base64.b64decode(img["data"]))
                seen["errors"] = errors
                return seen
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()


def main(argv):
    if CHROMIUM is None:
        print("chromium is not installed (scripts/setup.sh installs it)", file=sys.stderr)
        return 3
    page, shot = argv[0], argv[1]
    width, height = (int(argv[2]), int(argv[3])) if len(argv) > 3 else (1300, 900)
    seen = asyncio.run(run(page, shot, width, height))
    print(json.dumps(seen))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
