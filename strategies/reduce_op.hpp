#pragma once

namespace fulgur {

/// Element-wise reductions across processes.
enum class ReduceOp { Sum, Mean, Max, Min };

}  // namespace fulgur
