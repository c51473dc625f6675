"What a page in Chromium asked of the network and reported as errors: the browser tests of the app and of the docs."
from urllib.parse import urlsplit

LOOPBACK = {'127.0.0.1', 'localhost', '::1'}

def leaves_machine(url:str) -> bool:
    "Whether fetching `url` would reach beyond this machine (a relative URL, file:, data:, blob: and about: do not)."
    parts = urlsplit(url.strip())
    if parts.scheme in ('', 'file', 'data', 'blob', 'about') and not parts.netloc: return False
    return parts.hostname not in LOOPBACK

class Watch:
    "Every URL a page requests (WebSockets too) and every error it reports, from before it loads."
    def __init__(self, page):
        self.urls, self.errors = [], []
        page.on('request', lambda r: self.urls.append(r.url))
        page.on('websocket', lambda ws: self.urls.append(ws.url))
        page.on('console', self._console)
        page.on('pageerror', lambda e: self.errors.append(f'uncaught: {e}'))

    def _console(self, message):
        if message.type == 'error': self.errors.append(f'{message.text} ({message.location.get("url")})')

    def problems(self) -> list[str]:
        "What the page did that it must not: ask another host, or log an error."
        return ([f'requested beyond this machine: {u}' for u in self.urls if leaves_machine(u)] +
                [f'console error: {e}' for e in self.errors])
