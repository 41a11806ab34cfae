#include "fetch/redact.h"

namespace ds {

std::string redact_credentials(const std::string& url) {
  const auto scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const auto at = url.find('@', scheme + 3);
  const auto slash = url.find('/', scheme + 3);
  if (at == std::string::npos || (slash != std::string::npos && at > slash)) return url;
  return url.substr(0, scheme + 3) + url.substr(at + 1);
}

}  // namespace ds
