// URLs as they may be shown: a dataset url or source can carry user:password@ for a server that
// wants a login, and logs, messages and the provenance written into files must not.
#pragma once
#include <string>

namespace ds {

// The URL with any user:password@ removed; anything that is not a URL unchanged.
std::string redact_credentials(const std::string& url);

}  // namespace ds
