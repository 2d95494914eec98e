#pragma once
// The checkout's path, for benchmarks whose default data lives in it. One
// generated source holds it (bench_paths.cpp.in), so no other compile
// carries an absolute path and a fresh clone finds those in ccache.

namespace fulgur::bench {

/// The checkout this build was configured from.
extern const char kSourceDir[];

}  // namespace fulgur::bench
