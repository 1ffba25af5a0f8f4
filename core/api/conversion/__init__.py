"""Converting kueue.x-k8s.io objects between v1beta1 (served) and v1beta2 (stored).

Pure functions over JSON objects (no I/O): one module per kind whose fields differ, a
shared stash for fields one version has no place for (`preserved`), and the table of
which kinds need a conversion webhook (`versions`). The hub's `/convert` endpoint answers
ConversionReviews with `review.convert_review`.
"""
