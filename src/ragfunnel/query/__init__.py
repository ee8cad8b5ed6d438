"""Query engineering before (or instead of) top-k retrieval: the router (lookup / scoped / aggregate / out of
scope), the exhaustive aggregation path, and query transforms (pseudo-relevance feedback)."""
