/* Must not compile against the installed headers: ht_device's fields are the library's own. */
#include <hetune/hetune.h>

const char *device_backend(const ht_device *dev) { return dev->info.backend; }
