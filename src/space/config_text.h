/* A config's text form, internal: "A=1,B=x" as ht_config_format writes it, where a '\', ',' or '='
 * inside a name or value is escaped with a backslash. Shared by ht_config_parse and the readers of
 * recorded spaces, which take configs from the store's and the CSV export's config keys. */
#ifndef HETUNE_CONFIG_TEXT_H
#define HETUNE_CONFIG_TEXT_H

/* Splits text in place into NAME=VALUE items (at unescaped ','; each at its first unescaped '='),
 * removing the escapes; blank items are skipped, nothing is trimmed. Returns the number of items;
 * -1 when an item has no '=', -2 when there are more than max, with *bad at that item. */
int ht_config_split(char *text, char **names, char **values, int max, char **bad);

#endif
