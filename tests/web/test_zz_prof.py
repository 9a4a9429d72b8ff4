import cProfile, pstats, time
from bench.p8_otlp import batches
def test_prof(api, user):
    bodies = batches(6, 8, 1)
    for b in bodies[:2]:
        r = api.client.post("/api/v1/otlp/v1/traces", data=b, content_type="application/x-protobuf", headers=api.headers)
        assert r.status_code == 200, r.content
    prof = cProfile.Profile()
    t = time.process_time()
    prof.enable()
    for b in bodies[2:]:
        api.client.post("/api/v1/otlp/v1/traces", data=b, content_type="application/x-protobuf", headers=api.headers)
    prof.disable()
    print("CPU per span ms", (time.process_time() - t) / (4 * 512) * 1000)
    st = pstats.Stats(prof); st.sort_stats("tottime").print_stats(30); st.sort_stats("cumulative").print_stats("chatui", 40)
