// variants/no_put_variants.cu — launchPutVariant of a libte4j built without TE4J_PUT_VARIANTS
// (the library's own build): no experiment variant is compiled in, and tuning::apply refuses
// their knob values, so an op stream never gets here.
#include "stream/put_launch.h"

namespace te4j {
namespace cuda {

cudaError_t launchPutVariant(int, const PutLaunch&) { return cudaErrorNotSupported; }

}  // namespace cuda
}  // namespace te4j
