/* A program outside hetune's tree, built against an installed hetune: it lists the devices,
 * counts a space and evaluates an expression through the public API. */
#include <hetune/hetune.h>
#include <stdio.h>

int main(void) {
  ht_device_info *infos = NULL;
  int n = 0;
  if (ht_device_list(&infos, &n, NULL)) return fprintf(stderr, "%s\n", ht_last_error()), 1;
  ht_space *s;
  const ht_value v[] = {ht_int(1), ht_int(2), ht_int(4), ht_int(8)};
  uint64_t count = 0;
  if (ht_space_create(&s) || ht_space_add_param(s, "A", v, 4) || ht_space_add_param(s, "B", v, 4) ||
      ht_space_add_constraint(s, "A * B <= 8") || ht_space_count(s, &count))
    return fprintf(stderr, "%s\n", ht_last_error()), 1;
  printf("%d devices, first %s; %llu valid configs\n", n, n ? infos[0].id : "none", (unsigned long long)count);
  ht_space_destroy(s);
  return count == 10 && n >= 1 ? 0 : 1;
}
