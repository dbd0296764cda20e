// What requests cost in memory, and how the server's limits follow from the
// memory the Helm chart grants Tessera (k8s/helm/tessera/values.yaml,
// tessera.resources.limits.memory: 2Gi).
//
// Measured (benchmarks/request_memory_benchmark.cc: full-node-object bodies
// made of data/kube-scheduler-v1.26's objects, 1 to 128 MiB, every node
// passing, so that the filter answer echoes every Node; a counting allocator):
//
//   bytes held at the peak of one request, per byte of its body
//   (the body itself, the decoded fields, the answer)
//                  before (one simdjson DOM of the body)   streaming decode
//   filter         17.3                                     2.14-2.20
//   prioritize     15.8                                     1.22-1.28
//   kept by the io thread after it:  14.7                   < 0.07 (a ~60 KiB parser)
//   100 000 unknown node names (0.85 MiB): 29 MiB at the peak, bounded by the
//   node cap rather than by the body (kPerRequestBytes)
//
// With 256 MiB bodies and 1 GiB of them in flight, one request could need
// ~4.4 GB and every io thread kept ~3.7 GB: beyond the chart's 2 GiB. Now a
// body is read an object at a time (k8s/extender_args.h), and the limits are
// derived as follows. A request's body stays reserved against the server's
// body budget (HttpServerOptions::max_body_bytes_in_flight) from its header
// until its answer is written, so the requests in flight hold at most
//
//   kPeakBytesPerBodyByte x max_body_bytes_in_flight
//     + threads x kPerRequestBytes        (what does not grow with the body)
//
// and with the process' other memory (kProcessReserveBytes) that must stay
// within the container's limit. The defaults: 128 MiB bodies (a full NodeList
// of 5000 nodes of 26 KB each; kube-scheduler sends names only with
// nodeCacheCapable, the chart's setting, ~40 bytes a node), 384 MiB in flight
// (three of the largest at once), 2 threads:
//
//   3 x 384 MiB + 2 x 128 MiB + 512 MiB = 1920 MiB <= 2 GiB
//
// test/k8s/helm/memory_limits_test.cc checks this against the chart's values
// file, so that neither side changes alone; docs/operations/limits.md lists them.
#pragma once

#include <cstdint>

namespace tessera {

inline constexpr int64_t kMiBytes = int64_t{1} << 20;

/// Bytes held at the peak of a filter or prioritize request per byte of its
/// body: the measured 2.2 (filter) and 1.3 (prioritize), rounded up.
inline constexpr int64_t kPeakBytesPerBodyByte = 3;

/// What a request being handled holds besides that, whatever its body:
/// simdjson's parse of one object (~15 bytes a byte, objects of at most
/// k8s::kMaxObjectBytes = 4 MiB: 60 MiB) and what its nodes cost apart from
/// their bytes (views, a reason each): measured 29 MiB for the most names a
/// request may carry, 100 000 short ones, none known (a 0.85 MiB body with a
/// 5.3 MiB answer; BM_FilterUnknownNamesPeakMemory).
inline constexpr int64_t kPerRequestBytes = 128 * kMiBytes;

/// The rest of the process: the cluster model and its snapshots, the watch,
/// telemetry, per-connection buffers (512 connections of ~40 KiB), code.
inline constexpr int64_t kProcessReserveBytes = 512 * kMiBytes;

/// The memory that requests can hold at once under a body budget of
/// `bodies_in_flight` bytes served by `threads` io threads.
constexpr int64_t RequestMemoryBound(int64_t bodies_in_flight, int64_t threads) {
  return kPeakBytesPerBodyByte * bodies_in_flight + threads * kPerRequestBytes;
}

/// The memory limit a container needs for these limits:
/// RequestMemoryBound plus kProcessReserveBytes.
constexpr int64_t ContainerMemoryNeeded(int64_t bodies_in_flight, int64_t threads) {
  return RequestMemoryBound(bodies_in_flight, threads) + kProcessReserveBytes;
}

}  // namespace tessera
