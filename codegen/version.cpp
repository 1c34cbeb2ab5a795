// version.cpp - the full version of this aotc. The only file that includes the generated
// aotc_git_describe.h (compiler/meson.build: vcs_tag, rewritten only when git describe
// changes), so a new commit recompiles this file alone.
#include "aotc_config.h"
#include "aotc_git_describe.h"
#include "codegen.h"

namespace aotc::codegen {

const char* aotc_version() {
  // AOTC_GIT_DESCRIBE is "" outside a git checkout (a tarball, a pip build from an sdist).
  return sizeof(AOTC_GIT_DESCRIBE) > 1 ? AOTC_VERSION_STRING " (git " AOTC_GIT_DESCRIBE ")"
                                       : AOTC_VERSION_STRING;
}

}  // namespace aotc::codegen
