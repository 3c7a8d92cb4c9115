"""Settings of the demo project: a plain Scrapy project plus one add-on."""

BOT_NAME = "demo"
SPIDER_MODULES = ["demo.spiders"]
NEWSPIDER_MODULE = "demo.spiders"

# The one line scrapy-iri needs: IRI-aware dupefilter, request fingerprinter
# and redirect handling. IRI_RUNG picks how far URLs are compared ("string",
# "syntax", "scheme" or "protocol", the add-on's default).
ADDONS = {"scrapy_iri.Addon": 0}

# The demo web is served by a local proxy (run_demo.py sets http_proxy and
# https_proxy); keep the crawl quiet and self-contained.
ROBOTSTXT_OBEY = False
TELNETCONSOLE_ENABLED = False
REMOTE_CONTROL_ENABLED = False
LOG_LEVEL = "INFO"
DOWNLOAD_TIMEOUT = 30
CLOSESPIDER_PAGECOUNT = 2000
