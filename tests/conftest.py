import os

# Spark (later) and anything else must bind to loopback only in tests.
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
