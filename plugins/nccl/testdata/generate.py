#!/usr/bin/env python3
"""Regenerates the NCCL Inspector fixtures in this folder (deterministic).

Every byte written here mirrors a writer in the NVIDIA/nccl sources; see
README.md for the file/tag each function copies.  No GPU or NCCL was run:
the workload (sizes, times, timestamps, hashes, pids, UUIDs) is invented,
and the derived numbers (algbw, busbw, Prometheus aggregates) are computed
with the same double arithmetic, in the same order, as the C++ code.

Run from anywhere:  python3 plugins/nccl/testdata/generate.py
"""
import math
import os
import random
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# ---------------------------------------------------------------------------
# Copies of the source formulas/formatters
# ---------------------------------------------------------------------------

def op_bw(func, msg_bytes, exec_us, nranks, is_p2p=False):
    """inspectorComputeCollBw (2.28.3-2.29.7) / inspectorComputeOpBw (2.30.3+)."""
    time_in_sec = exec_us / 1000000.0
    if is_p2p or func in ("Send", "Recv", "SendRecv"):
        traffic, factor = float(msg_bytes), 1.0
    elif func in ("Reduce", "Broadcast"):
        traffic, factor = float(msg_bytes), 1.0
    elif func == "AllReduce":
        traffic, factor = float(msg_bytes), float(2 * (nranks - 1)) / float(nranks)
    elif func in ("ReduceScatter", "AllGather", "AllGatherV"):
        traffic, factor = float(msg_bytes * nranks), float(nranks - 1) / float(nranks)
    else:  # default branch (e.g. "Invalid")
        traffic, factor = 0.0, 0.0
    algo = (traffic / 1.0e9 / time_in_sec) if time_in_sec != 0 else 0.0
    return algo, algo * factor


def jdouble(v):
    """json.cc jsonDouble: NaN -> the string "nan", else printf("%lf")."""
    if v != v:
        return '"nan"'
    return "%f" % v


def jstr(s):
    """json.cc sanitizeJson: escapes " \\ / \\t \\n."""
    out = []
    for ch in s:
        if ch in '"\\/':
            out.append("\\" + ch)
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\n":
            out.append("\\n")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def header(comm, with_name):
    parts = ['"id":%s' % jstr(comm["id"])]
    if with_name:  # 2.30.3+: comm_name, "unknown" when NULL/empty
        parts.append('"comm_name":%s' % jstr(comm.get("name") or "unknown"))
    parts += ['"rank":%d' % comm["rank"], '"n_ranks":%d' % comm["nranks"],
              '"nnodes":%d' % comm["nnodes"]]
    return "{" + ",".join(parts) + "}"


def metadata(ts_us, host, pid, git_rev):
    return ('{"inspector_output_format_version":"v4.0","git_rev":%s,'
            '"rec_mechanism":"nccl_profiler_interface","dump_timestamp_us":%d,'
            '"hostname":%s,"pid":%d}' % (jstr(git_rev), ts_us, jstr(host), pid))


def verbose_block(prefix, trk):
    """inspectorCompletedCollVerbose / inspectorCompletedP2pVerbose."""
    def kev(kind):
        items = []
        for ch, k in enumerate(trk["kernel"]):
            items.append('{"channel_id":%d,"kernel_start_%s":%d,"kernel_stop_%s":%d,'
                         '"kernel_record_%s":%d}' % (ch, kind, k["start"][kind], kind,
                                                     k["stop"][kind], kind, k["record"][kind]))
        return "[" + ",".join(items) + "]"
    return (',"event_trace_sn":{"%s_start_sn":%d,"%s_stop_sn":%d,"kernel_events":%s}'
            ',"event_trace_ts":{"%s_start_ts":%d,"%s_stop_ts":%d,"kernel_events":%s}'
            % (prefix, trk["start"]["sn"], prefix, trk["stop"]["sn"], kev("sn"),
               prefix, trk["start"]["ts"], prefix, trk["stop"]["ts"], kev("ts")))


def coll_perf(op, nranks):
    algo, bus = op.get("bw") or op_bw(op["func"], op["size"], op["us"], nranks)
    s = ('{"coll":%s,"coll_sn":%d,"coll_msg_size_bytes":%d,"coll_exec_time_us":%d,'
         '"coll_timing_source":%s,"coll_algobw_gbs":%s,"coll_busbw_gbs":%s'
         % (jstr(op["func"]), op["sn"], op["size"], op["us"], jstr(op.get("src", "kernel_gpu")),
            jdouble(algo), jdouble(bus)))
    if op.get("trace"):
        s += verbose_block("coll", op["trace"])
    return s + "}"


def p2p_perf(op):
    algo, bus = op.get("bw") or op_bw(op["func"], op["size"], op["us"], 0, is_p2p=True)
    s = ('{"p2p":%s,"p2p_sn":%d,"p2p_peer":%d,"p2p_msg_size_bytes":%d,"p2p_exec_time_us":%d,'
         '"p2p_timing_source":%s,"p2p_algobw_gbs":%s,"p2p_busbw_gbs":%s'
         % (jstr(op["func"]), op["sn"], op["peer"], op["size"], op["us"],
            jstr(op.get("src", "kernel_gpu")), jdouble(algo), jdouble(bus)))
    if op.get("trace"):
        s += verbose_block("p2p", op["trace"])
    return s + "}"


def json_line(comm, op, ts_us, host, pid, git_rev, with_name):
    key = "p2p_perf" if op.get("p2p") else "coll_perf"
    body = p2p_perf(op) if op.get("p2p") else coll_perf(op, comm["nranks"])
    return '{"header":%s,"metadata":%s,"%s":%s}\n' % (
        header(comm, with_name), metadata(ts_us, host, pid, git_rev), key, body)


def human_size_229(b):
    """inspector_prom.cc (2.29.3-2.29.7) inspectorFormatHumanReadableSize."""
    units = ["B", "KB", "MB", "GB", "TB"]
    i, size = 0, float(b)
    while size >= 1024.0 and i < 4:
        size /= 1024.0
        i += 1
    return "%dB" % b if i == 0 else "%.2f%s" % (size, units[i])


def range_lower_230(b):
    """inspector_prom.cc (2.30.3+) inspectorPromMessageSizeRangeLowerBound."""
    if b == 0:
        return 0
    i, v = 0, float(b)
    while v >= 1024.0 and i < 4:
        v /= 1024.0
        i += 1
    v = max(v, 1.0)
    lower = max(math.floor(v), 1.0)
    return int(lower) * int(math.pow(1024.0, i))


def range_label_230(b):
    """inspector_prom.cc (2.30.3+) inspectorPromFormatMessageSizeRange."""
    if b == 0:
        return "0B"
    units = ["B", "KB", "MB", "GB", "TB"]
    i, v = 0, float(b)
    while v >= 1024.0 and i < 4:
        v /= 1024.0
        i += 1
    v = max(v, 1.0)
    lower = max(math.floor(v), 1.0)
    return "%.0f-%.0f%s" % (lower, lower + 1.0, units[i])


def iso_utc(ts_us):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts_us // 1000000))


def write(case, name, text):
    d = os.path.join(HERE, case)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "w", newline="\n") as f:
        f.write(text)


def us_for(func, size, nranks, busbw_gbs, is_p2p=False):
    """Invert the formula to pick an integer exec time for a target busbw."""
    _, bus_per_us = op_bw(func, size, 1, nranks, is_p2p)  # busbw at 1 us
    return max(1, int(round(bus_per_us / busbw_gbs)))


HOST = "node01"
GIB, MIB = 1 << 30, 1 << 20

# ---------------------------------------------------------------------------
# Case 1/2: 2.28.3 and 2.29.x JSON, 8 ranks, one comm, one dump per op
# ---------------------------------------------------------------------------

def training_ops_v228(rng, steps):
    """Workload shared by all ranks: (func, size, target busbw or fixed us)."""
    ops = [("Broadcast", 512 * MIB, 330.0)]
    for _ in range(steps):
        ops += [("AllGather", 64 * MIB, 360.0), ("AllGather", 64 * MIB, 360.0),
                ("ReduceScatter", 64 * MIB, 345.0), ("ReduceScatter", 64 * MIB, 345.0),
                ("AllReduce", 1 * GIB, 455.0), ("AllReduce", 8, None)]
    return ops


def build_v228_style(case, git_rev, comm_id, pid0, t0_us, steps, ranks, seed):
    rng = random.Random(seed)
    nranks = 8
    ops = training_ops_v228(rng, steps)
    # per-op "true" duration shared by all ranks, per-rank jitter of a few us
    shared = []
    sn = {}
    for func, size, bus in ops:
        seq = sn.get(func, 0)
        sn[func] = seq + 1
        if bus is None:
            base = rng.randint(14, 19)
        else:
            base = us_for(func, size, nranks, bus * rng.uniform(0.97, 1.02))
        shared.append((func, size, seq, base))
    files = {}
    for r in ranks:
        pid = pid0 + r
        comm = {"id": comm_id, "rank": r, "nranks": nranks, "nnodes": 1}
        out, t = [], t0_us + rng.randint(0, 40)
        for func, size, seq, base in shared:
            us = max(1, base + rng.randint(-3, 3))
            t += us + rng.randint(25, 60)          # op completes, dump thread picks it up
            out.append(json_line(comm, {"func": func, "size": size, "sn": seq, "us": us},
                                 t, HOST, pid, git_rev, with_name=False))
        name = "%s-pid%d.log" % (HOST, pid)
        files[name] = "".join(out)
        write(case, name, files[name])
    return files


# ---------------------------------------------------------------------------
# 2.29.x per-collective Prometheus
# ---------------------------------------------------------------------------

def prom_229_lines(comm, coll, host, job, jobid, gpu, ts_us):
    algo, bus = op_bw(coll["func"], coll["size"], coll["us"], comm["nranks"])
    labels = ('comm_id="%s",hostname="%s",rank="%d",slurm_job="%s",slurm_job_id="%s",'
              'nranks="%d",n_nodes="%d",gpu_device_id="GPU%d",collective="%s",coll_sn="%d",'
              'timestamp="%s",message_size="%s"'
              % (comm["id"], host, comm["rank"], job, jobid, comm["nranks"], comm["nnodes"], gpu,
                 coll["func"], coll["sn"], iso_utc(ts_us), human_size_229(coll["size"])))
    return ("nccl_algorithm_bandwidth_gbs{%s} %.6g\n"
            "nccl_bus_bandwidth_gbs{%s} %.6g\n"
            "nccl_collective_exec_time_microseconds{%s} %.6g\n"
            % (labels, algo, labels, bus, labels, float(coll["us"])))


# ---------------------------------------------------------------------------
# 2.30.x JSON (comm_name, p2p ring drain) and per-interval Prometheus
# ---------------------------------------------------------------------------

FUNC_ENUM = {"Broadcast": 0, "Reduce": 1, "AllGather": 2, "ReduceScatter": 3, "AllReduce": 4,
             "SendRecv": 5, "Send": 6, "Recv": 7, "All2All": 8, "AllGatherV": 9}


def prom_230(devices, jobid):
    """devices: list of (uuid, node, gpu_name, [(comm, op), ...] in drain order)."""
    files = {}
    for uuid, node, gpu, ops in sorted(devices, key=lambda d: d[0]):
        coll, p2p = {}, {}
        for comm, op in ops:
            is_p2p = bool(op.get("p2p"))
            algo, bus = op_bw(op["func"], op["size"], op["us"], comm["nranks"], is_p2p)
            base = (comm["nranks"], comm["nnodes"], FUNC_ENUM[op["func"]],
                    range_lower_230(op["size"]), comm.get("name") or "unknown")
            if is_p2p:
                key, tbl = base, p2p
            else:
                key, tbl = base + ("%s_%s" % (op.get("algo", "unknown"), op.get("proto", "unknown")),), coll
            a = tbl.setdefault(key, {"count": 0, "exec": 0.0, "alog": 0.0, "acnt": 0, "blog": 0.0, "bcnt": 0})
            a["count"] += 1
            a["exec"] += float(op["us"])
            if algo > 0.0:
                a["alog"] += math.log(algo); a["acnt"] += 1
            if bus > 0.0:
                a["blog"] += math.log(bus); a["bcnt"] += 1
        out = []
        for key in sorted(coll):  # std::map order: nranks, nnodes, func enum, size, name, algo_proto
            a = coll[key]
            nr, nn, fe, lo, name, ap = key
            func = [k for k, v in FUNC_ENUM.items() if v == fe][0]
            labels = ('version="v5.1",slurm_job_id="%s",node="%s",gpu="%s",comm_name="%s",'
                      'n_nodes="%d",nranks="%d",collective="%s",message_size="%s",algo_proto="%s"'
                      % (jobid, node, gpu, name, nn, nr, func, range_label_230(lo), ap))
            execm = a["exec"] / a["count"] if a["count"] else 0.0
            busm = math.exp(a["blog"] / a["bcnt"]) if a["bcnt"] else 0.0
            out.append("nccl_bus_bandwidth_gbs{%s} %.6g\nnccl_collective_exec_time_microseconds{%s} %.6g\n"
                       % (labels, busm, labels, execm))
        for key in sorted(p2p):
            a = p2p[key]
            nr, nn, fe, lo, name = key
            func = [k for k, v in FUNC_ENUM.items() if v == fe][0]
            labels = ('version="v5.1",slurm_job_id="%s",node="%s",gpu="%s",comm_name="%s",'
                      'n_nodes="%d",nranks="%d",p2p_operation="%s",message_size="%s"'
                      % (jobid, node, gpu, name, nn, nr, func, range_label_230(lo)))
            execm = a["exec"] / a["count"] if a["count"] else 0.0
            busm = math.exp(a["blog"] / a["bcnt"]) if a["bcnt"] else 0.0
            out.append("nccl_p2p_bus_bandwidth_gbs{%s} %.6g\nnccl_p2p_exec_time_microseconds{%s} %.6g\n"
                       % (labels, busm, labels, execm))
        files["nccl_inspector_metrics_%s.prom" % uuid] = "".join(out)
    return files


def build_v230(seed):
    rng = random.Random(seed)
    git_rev = "6da4220"
    world_id, pp_id = "0x3c91e5f0a7d24b68", "0xd15ea5e0b0a7c3f1"
    nranks = 8
    # one training step on GPU0/GPU1 (pp stage pair 0<->1), repeated; colls on "world"
    step = [("AllGather", 64 * MIB, 365.0, "RING", "SIMPLE"),
            ("AllGather", 64 * MIB, 365.0, "RING", "SIMPLE"),
            ("AllReduce", 4608 * MIB, 470.0, "NVLS", "SIMPLE"),   # 4.5 GiB -> "4-5GB"
            ("AllReduce", 1 * GIB, 455.0, "NVLS", "SIMPLE"),
            ("AllReduce", 65536, 9.0, "RING", "LL"),
            ("ReduceScatter", 64 * MIB, 350.0, "RING", "SIMPLE")]
    nsteps = 3
    shared, coll_sn = [], {"AllGather": 8812, "AllReduce": 4404, "ReduceScatter": 2202}
    for s in range(nsteps):
        p2p = []
        for k in range(2):  # forward activations 0->1, backward grads 1->0
            p2p.append(max(1, int(round(16 * MIB / (rng.uniform(255.0, 285.0) * 1e3)))))
        colls = []
        for func, size, bus, algo, proto in step:
            seq = coll_sn[func]; coll_sn[func] += 1
            base = us_for(func, size, nranks, bus * rng.uniform(0.97, 1.02))
            colls.append((func, size, seq, base, algo, proto))
        shared.append((p2p, colls))

    t0 = 1767364800000000 + 731 * 1000000  # 2026-01-02T14:40:00Z + 731 s
    files, prom_devices = {}, []
    uuids = ["5e2b9c71-0a3d-4f68-b1c4-7a90d3e2f615", "a04f7d3e-91c2-4b5a-8e6f-2c17b9d0e4a8"]
    for r in (0, 1):
        pid = 2210437 + r
        world = {"id": world_id, "name": "world", "rank": r, "nranks": nranks, "nnodes": 1}
        pp = {"id": pp_id, "name": "pp_0_1", "rank": r, "nranks": 2, "nnodes": 1}
        out, drained = [], []
        p2p_sn = 0
        t = t0 + rng.randint(0, 300)
        for s, (p2ps, colls) in enumerate(shared):
            batch_p2p, batch_coll = [], []
            # forward: rank0 Send -> peer 1, rank1 Recv <- peer 0 ; backward reversed
            for k, us in enumerate(p2ps):
                p2p_sn += 1
                func = ("Send" if r == 0 else "Recv") if k == 0 else ("Recv" if r == 0 else "Send")
                batch_p2p.append({"p2p": True, "func": func, "sn": p2p_sn, "peer": 1 - r,
                                  "size": 16 * MIB, "us": max(1, us + rng.randint(-2, 2))})
            for func, size, seq, base, algo, proto in colls:
                batch_coll.append({"func": func, "size": size, "sn": seq, "algo": algo, "proto": proto,
                                   "us": max(1, base + rng.randint(-3, 3))})
            # one dump per second: comm list is newest-first (pp was created after world),
            # and per comm the coll ring is drained before the p2p ring.
            t += 1000000 + rng.randint(50, 400)
            for op in batch_p2p:
                t += rng.randint(2, 6)
                out.append(json_line(pp, op, t, HOST, pid, git_rev, True))
                drained.append((pp, op))
            for op in batch_coll:
                t += rng.randint(2, 6)
                out.append(json_line(world, op, t, HOST, pid, git_rev, True))
                drained.append((world, op))
        name = "%s-pid%d.log" % (HOST, pid)
        files[name] = "".join(out)
        write("v2.30.3-json-8rank-p2p", name, files[name])
        prom_devices.append((uuids[r], HOST, "GPU%d" % r, drained))
    for name, text in prom_230(prom_devices, "48213").items():
        write("v2.30.3-prom-interval", name, text)
    return files


def build_v230_verbose(seed):
    rng = random.Random(seed)
    comm = {"id": "0x3c91e5f0a7d24b68", "name": "world", "rank": 0, "nranks": 8, "nnodes": 1}
    pp = {"id": "0xd15ea5e0b0a7c3f1", "name": "pp_0_1", "rank": 0, "nranks": 2, "nnodes": 1}
    pid, t = 2210437, 1767365600000000
    out = []

    def trace(start_sn, t_start, us, nch):
        sn = start_sn
        trk = {"start": {"sn": sn, "ts": t_start}}
        sn += 1
        trk["stop"] = {"sn": sn, "ts": t_start + rng.randint(9, 20)}   # host-side stop after launch
        kern = []
        for ch in range(nch):
            sn += 1
            kern.append({"start": {"sn": sn, "ts": t_start + rng.randint(22, 40)}})
        end = t_start + 40 + us
        for ch in range(nch):
            sn += 1
            kern[ch]["record"] = {"sn": sn, "ts": end + rng.randint(5, 25)}
            sn += 1
            kern[ch]["stop"] = {"sn": sn, "ts": kern[ch]["record"]["ts"] + rng.randint(1, 4)}
        return {"start": trk["start"], "stop": trk["stop"], "kernel": kern}

    t_op = t - 900000
    for i, (size, algo) in enumerate([(1 * MIB, "RING"), (2 * MIB, "RING")]):
        us = us_for("AllReduce", size, 8, 140.0 + 20 * i)
        op = {"func": "AllReduce", "size": size, "sn": 4410 + i, "us": us, "trace": trace(1, t_op, us, 4)}
        t_op += 5000
        t += rng.randint(2, 6)
        out.append(json_line(comm, op, t, HOST, pid, "6da4220", True))
    # P2P: event_trace sn counter starts at p2p_sn (p2pEvtTrk.sn = p2pInfo->sn), so start_sn = p2p_sn + 1
    us = max(1, int(round(4 * MIB / (210.0 * 1e3))))
    op = {"p2p": True, "func": "Send", "sn": 7, "peer": 1, "size": 4 * MIB, "us": us,
          "trace": trace(8, t_op, us, 2)}
    t += rng.randint(2, 6)
    out.insert(0, json_line(pp, op, t - 20, HOST, pid, "6da4220", True))
    write("v2.30.3-json-verbose", "%s-pid%d.log" % (HOST, pid), "".join(out))


def build_v230_edge():
    """Edge cases for a parser; see README (the nan line is NOT reachable via inspectorComputeOpBw)."""
    comm = {"id": "0x3c91e5f0a7d24b68", "name": "", "rank": 5, "nranks": 8, "nnodes": 1}
    pid, t, rev = 2210442, 1767366000000000, "6da4220-dirty"
    ops = [
        # normal line, comm_name NULL/empty -> "unknown"
        {"func": "AllReduce", "size": 1 * GIB, "sn": 4500, "us": 4190},
        # NCCL_INSPECTOR_REQUIRE_KERNEL_TIMING=0: CPU-timed op with 0 us -> algbw/busbw 0.000000
        {"func": "AllGather", "size": 8192, "sn": 8900, "us": 0, "src": "collective_cpu"},
        {"func": "ReduceScatter", "size": 65536, "sn": 2250, "us": 31, "src": "kernel_cpu"},
        # synthetic: jsonDouble's NaN branch ("nan" string); unreachable with the 2.30.3 formula
        {"func": "AllReduce", "size": 1 * GIB, "sn": 4501, "us": 4188, "bw": (float("nan"), float("nan"))},
        # "Invalid" func name (ncclStringToFunc fallback) -> default branch, bw 0
        {"func": "Invalid", "size": 16 * MIB, "sn": 12, "us": 95},
    ]
    out = []
    for op in ops:
        t += 3
        out.append(json_line(comm, op, t, HOST, pid, rev, True))
    # comm name with a '/' is escaped as "\/" by sanitizeJson
    comm2 = {"id": "0x1b2c3d4e5f60718", "name": "pg/tp:0", "rank": 1, "nranks": 4, "nnodes": 1}
    t += 3
    out.append(json_line(comm2, {"func": "AllReduce", "size": 256 * MIB, "sn": 77, "us": 1012}, t, HOST, pid, rev, True))
    write("v2.30.3-json-edge-cases", "%s-pid%d.log" % (HOST, pid), "".join(out))


def build_straggler(seed, factor=1.8, slow_rank=2, ncoll=24):
    rng = random.Random(seed)
    nranks, size = 4, 256 * MIB
    comm_id = "0x8f0e7a6b5c4d3e21"
    bases = [us_for("AllReduce", size, nranks, rng.uniform(395.0, 415.0)) for _ in range(ncoll)]
    t0 = 1767369600000000
    for r in range(nranks):
        pid = 3301200 + r
        comm = {"id": comm_id, "name": "tp_group_0", "rank": r, "nranks": nranks, "nnodes": 1}
        out, t = [], t0 + rng.randint(0, 200)
        for k, b in enumerate(bases):
            us = int(round(b * factor)) if r == slow_rank else b + rng.randint(-4, 4)
            op = {"func": "AllReduce", "size": size, "sn": 1200 + k, "us": us, "algo": "NVLS", "proto": "SIMPLE"}
            if k == 12:
                t += 1000000 + rng.randint(50, 300)   # second dump batch
            t += rng.randint(2, 6)
            out.append(json_line(comm, op, t, HOST, pid, "6da4220", True))
        write("v2.30.3-straggler-4rank", "%s-pid%d.log" % (HOST, pid), "".join(out))
    return bases


def build_v229_prom():
    job, jobid = "pretrain_llama", "48213"
    # GPU0 holds two comms: world (8 ranks) and a TP comm (4 ranks); one dump after the
    # last completed op of each (2.29 keeps only the latest completed op per comm).
    world = {"id": "0x5a3f1c9e2b7d4e81", "rank": 0, "nranks": 8, "nnodes": 1}
    tp = {"id": "0x2e6d0b9a4c8f1357", "rank": 0, "nranks": 4, "nnodes": 1}
    tp1 = {"id": "0x2e6d0b9a4c8f1357", "rank": 1, "nranks": 4, "nnodes": 1}
    world1 = dict(world, rank=1)
    ts = 1767189630123456
    # liveComms is newest-first: tp was created after world, so it is written first
    gpu0 = (prom_229_lines(tp, {"func": "AllReduce", "sn": 3317, "size": 128 * MIB, "us": 503}, "node01", job, jobid, 0, ts)
            + prom_229_lines(world, {"func": "ReduceScatter", "sn": 1406, "size": 64 * MIB, "us": 1352}, "node01", job, jobid, 0, ts))
    gpu1 = (prom_229_lines(tp1, {"func": "AllReduce", "sn": 3317, "size": 128 * MIB, "us": 506}, "node01", job, jobid, 1, ts + 211)
            + prom_229_lines(world1, {"func": "AllReduce", "sn": 1407, "size": 8, "us": 17}, "node01", job, jobid, 1, ts + 211))
    write("v2.29.7-prom-per-collective", "nccl_inspector_metrics_5e2b9c71-0a3d-4f68-b1c4-7a90d3e2f615.prom", gpu0)
    write("v2.29.7-prom-per-collective", "nccl_inspector_metrics_a04f7d3e-91c2-4b5a-8e6f-2c17b9d0e4a8.prom", gpu1)


if __name__ == "__main__":
    build_v228_style("v2.28.3-json-8rank", "", "0x7f8c496ae9f661", 1639450, 1748030377000000,
                     steps=6, ranks=range(8), seed=2283)
    build_v228_style("v2.29.7-json-8rank", "b91894b", "0x5a3f1c9e2b7d4e81", 1873300, 1767189600000000,
                     steps=4, ranks=(0, 1), seed=2297)
    build_v229_prom()
    build_v230(seed=2303)
    build_v230_verbose(seed=23031)
    build_v230_edge()
    bases = build_straggler(seed=1800)
