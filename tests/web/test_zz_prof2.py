import gc, time
from bench.p8_otlp import batches
def test_cpu(api, user):
    gc.freeze(); gc.set_threshold(50_000, 20, 100)
    bodies = batches(10, 8, 1)
    for b in bodies[:2]:
        api.client.post("/api/v1/otlp/v1/traces", data=b, content_type="application/x-protobuf", headers=api.headers)
    t = time.process_time()
    for b in bodies[2:]:
        r = api.client.post("/api/v1/otlp/v1/traces", data=b, content_type="application/x-protobuf", headers=api.headers)
        assert r.status_code == 200
    print("CPU per span ms", (time.process_time() - t) / (8 * 512) * 1000)
