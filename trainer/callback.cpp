#include <fulgur/trainer/callback.hpp>
// Callback is header-only; this unit checks the header compiles on its own.
