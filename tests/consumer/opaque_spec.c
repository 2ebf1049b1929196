/* Must not compile against the installed headers: ht_spec's fields are the library's own. */
#include <hetune/hetune.h>

const char *spec_name(const ht_spec *spec) { return spec->name; }
