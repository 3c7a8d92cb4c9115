"""``python -m simweb [demo|protocol] [--port N] [--pages N]``: serve a web until Ctrl-C.

Then, from another shell::

    curl -x http://127.0.0.1:N http://xn--bcher-kva.example/
    curl -kx http://127.0.0.1:N https://fass.example/
    curl -x http://127.0.0.1:N http://simweb.control/counts
"""

from __future__ import annotations

import argparse
import threading

from . import SimulatedWeb, demo_sites, protocol_sites

SITE_SETS = {"demo": demo_sites, "protocol": protocol_sites}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m simweb", description=__doc__.split("\n")[0])
    parser.add_argument("sites", nargs="?", choices=sorted(SITE_SETS), default="demo")
    parser.add_argument("--port", type=int, default=0, help="proxy port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--pages", type=int, default=None, help="protocol web: pages per main host (default: 20)")
    options = parser.parse_args(argv)
    if options.pages is not None and options.sites != "protocol":
        parser.error("--pages applies to the protocol web")
    sites = protocol_sites(options.pages) if options.pages is not None else SITE_SETS[options.sites]()
    with SimulatedWeb(sites, port=options.port) as web:
        print(f"proxy: {web.proxy_url}  (http_proxy / https_proxy)")
        print(f"resources: {len(web.resource_ids())}; counters: {web.control_url}/counts")
        for url in web.start_urls():
            print(f"start: {url}")
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
