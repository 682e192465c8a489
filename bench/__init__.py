"""``make bench``: how fast Rami is, against what bounds it on the same machine, in one run.

The server against bare grpc.aio references (``refs``), the engine against OpenSpiel's and
RLCard's gin rummy (``peers``), the solver against RLCard's meld search, memory; printed as
(ours, reference, ratio), saved in ``bench/results.json`` and written into
``docs/performance.md``. ``python -m bench --help`` lists the knobs.
"""
