// eager_module_loading.cu — asks the CUDA driver to load every kernel when the context is made.
//
// Why: since CUDA 12.2 kernels load lazily, on their first launch, and loading may wait for the
// whole context to go idle. A te4j wait kernel spins until a peer signals; if the peer's (or
// this process's) next te4j kernel is launched for the first time meanwhile, its loading waits
// for the spinning kernel, and both sides sit until the wait's timeout. Loading everything up
// front removes that trap. A value the user already set is left alone (setenv without
// overwrite); it only takes effect if CUDA is not yet initialised in this process.
#include <cstdlib>

namespace {

__attribute__((constructor)) void te4jRequestEagerModuleLoading() {
  setenv("CUDA_MODULE_LOADING", "EAGER", 0);
}

}  // namespace
