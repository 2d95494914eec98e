#pragma once

namespace fulgur {

/// How values are combined: across processes (Strategy::all_reduce) and over
/// an epoch (LogOptions::reduce; Mean is weighted by batch size there).
enum class ReduceOp { Sum, Mean, Max, Min };

}  // namespace fulgur
