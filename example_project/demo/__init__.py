"""A Scrapy project that crawls the scrapy-iri demo web (see run_demo.py)."""
