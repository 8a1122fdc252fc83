// JSON as Go's encoding/json writes it, so that what tidal answers
// kube-scheduler is byte for byte what a Go extender would answer:
//  * compact, object members in the order the document holds them (Go
//    writes struct fields in declaration order, and maps sorted by key; the
//    wire encoders in extender_wire.cc build documents in those orders);
//  * strings escaped as Go escapes them with HTML escaping on (its default):
//    '"' and '\\' with a backslash, \b \f \n \r \t short (Go >= 1.22), other
//    control characters and < > & as \u00XX in lower-case hex, U+2028 and
//    U+2029 as \u2028 \u2029; everything else as UTF-8 (nlohmann has already
//    refused invalid UTF-8 on the way in);
//  * integers as integers; floats the shortest way that reads back, in 'f'
//    form for 1e-6 <= |x| < 1e21 and 'e' form otherwise with Go's exponent
//    ("1e-07" -> "1e-7").
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace tidal::k8s {

using ojson = nlohmann::ordered_json;

std::string GoJson(const ojson& v);
void AppendGoString(std::string& out, std::string_view s);

}  // namespace tidal::k8s
