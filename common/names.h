/*
 * common/names.h - Kubernetes name and label rules (k8s.io/apimachinery validation).
 *
 * Each check returns NULL when s is valid, or a constant message that says which rule s breaks,
 * worded exactly as apimachinery v0.36 words it (e.g. "must be no more than 63 characters", "a
 * lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must
 * start and end with an alphanumeric character (e.g. ..., regex used for validation is ...)").
 * Where apimachinery lists several problems, the message is the first of them (length before
 * pattern). Lengths are in bytes. A NULL s is checked as "". Callers put the field path in front.
 */
#ifndef COMMON_NAMES_H
#define COMMON_NAMES_H

/* RFC 1035 label: ^[a-z]([-a-z0-9]*[a-z0-9])?$, at most 63 characters (TrainJob names). */
const char *common_names_rfc1035_label(const char *s);

/* RFC 1123 (DNS-1123) label: ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$, at most 63 characters. */
const char *common_names_dns1123_label(const char *s);

/* DNS-1123 subdomain: dot-separated DNS-1123 labels, at most 253 characters (object names). As in
 * apimachinery, the single labels of a subdomain are not limited to 63 characters. */
const char *common_names_dns1123_subdomain(const char *s);

/* Label value: empty, or ^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$, at most 63 characters. */
const char *common_names_label_value(const char *s);

/* Qualified name (label and annotation keys): [prefix/]name, prefix a DNS-1123 subdomain of at
 * most 253 characters, name at most 63 characters of [A-Za-z0-9][-A-Za-z0-9_.]*[A-Za-z0-9].
 * Messages name the part ("prefix part ...", "name part ...") as apimachinery does. */
const char *common_names_qualified_name(const char *s);

#endif
