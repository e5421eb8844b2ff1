// `mseloss bench`: times the library against ceilings measured in the same
// run (a read-only probe over the same two arrays, a copy of the same bytes)
// and, on CUDA, against CUB.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "mseloss/mseloss.hpp"

namespace mseloss::bench {

enum class BenchOp { forward, backward, fused };
const char* to_string(BenchOp op);

// The fewest bytes an operation moves over tensors of `tensor_bytes` each:
// forward mean/sum reads two (2), forward none also writes one (3),
// backward and fused mean/sum read two and write one (3), their none forms
// read or write one more (4); writing grad_target too adds one to backward
// and fused.
double moved_bytes(BenchOp op, Reduction r, double tensor_bytes, bool grad_target);

struct Config {
  Device device = Device::cpu;
  std::vector<std::int64_t> sizes;
  std::vector<DType> dtypes;
  std::vector<Reduction> reductions;
  std::vector<Algorithm> algorithms;
  std::vector<BenchOp> ops;
  int num_threads = 0;
  int grid_blocks = 0;        // CUDA: force a grid (0 = the library's choice)
  int misalign = 0;           // CUDA: input and target start this many elements past a 16-byte boundary
  bool programmatic_launch = true;  // CUDA: the library's kernels and the read probe alike (Options::programmatic_launch)
  bool grad_target = false;   // backward and fused write grad_target as well as grad_input
  int min_runs = 20;          // timed runs per measurement (median is reported)
  double min_seconds = 0.05;  // ... and at least this long in total
  bool progress = true;       // a progress line on stderr
};

struct Row {
  std::string op, device, algorithm, dtype, reduction;
  std::int64_t n = 0;
  bool grad_target = false;  // backward and fused: grad_target was written too
  double bytes = 0;       // the fewest bytes the operation must move
  double us = 0;          // median time per call (CUDA: device time, events)
  double gbps = 0;        // bytes / us
  double probe_us = 0;    // read probe over the same two arrays
  double copy_us = 0;     // a copy of bytes / 2 (moving `bytes`: read + write), timed at that size
  double vs_probe = 0;    // probe_us / us: 1.0 = at the read ceiling
  // Forward: the probe and the call timed in turn (time_paired in
  // bench_cuda.cu and bench.cpp): the median of the per-pair ratios
  // probe / call and the medians of each side; 0 elsewhere.
  double vs_probe_paired = 0, probe_paired_us = 0, us_paired = 0;
  double vs_copy = 0;     // copy_us / us
  double graph_us = 0;    // CUDA: median of graph replays (small N), else 0
  double cub_us = 0;      // CUDA forward mean/sum: CUB TransformReduce, else 0
  double vs_cub = 0;      // cub_us / us
  double host_us = 0;     // CUDA: host (wall) time per call, calls queued back to back
};

std::vector<Row> run(const Config& config);
std::vector<Row> run_cuda(const Config& config);  // bench_cuda.cu; throws without CUDA

void print_table(const std::vector<Row>& rows);
void write_csv(const std::vector<Row>& rows, const std::string& path);
void write_json(const std::vector<Row>& rows, const std::string& path);

// Device memory for the CLI (CUDA builds; they throw Unavailable otherwise).
void* device_alloc(std::size_t bytes);
void device_free(void* p);
void copy_to_device(void* dst, const void* src, std::size_t bytes);
void copy_to_host(void* dst, const void* src, std::size_t bytes);

// Median of a sample (the input is reordered).
double median(std::vector<double> v);

// A ceiling and a call timed in turn (time_paired in bench.cpp and
// bench_cuda.cu): the median of the per-pair ratios ceiling / call, and the
// medians of each side.
struct Paired {
  double ratio = 0, ceiling_us = 0, call_us = 0;
};

}  // namespace mseloss::bench
