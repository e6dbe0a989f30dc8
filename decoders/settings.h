// One description of every decoder setting (a field of DecoderOptions): its name, the
// same in experiment files, in the results' params and in the code; its command-line
// flag; its range; and, for the settings the table carries whole, how it is read,
// written and labelled. The command line (`generate`), the experiment schema, the grid
// and the records (harness/sweep/point.h) all read this one table, so a range or a
// spelling cannot disagree between them.
//
// Two forms of entry:
//   Custom  the settings older than this table (k, k_policy, sampling, draft, ...): the
//           table gives their name, flag and range; their keys, labels and JSON forms
//           are spelled out where the records are written, unchanged since old results.
//   Table   newer settings, carried whole: parse/text give the CLI flag's value, an
//           experiment axis, the params field (a string) and the point's key and name
//           (";name=text", "/name=text", only when not the default, so the keys of
//           older results stay valid). Adding such a setting is a field of
//           DecoderOptions, an entry here and the code that reads it.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "decoders/decoder.h"

namespace specsweep {

struct SettingRange {
  double lo = 0, hi = 0;
  bool lo_open = false;  // (lo, hi] instead of [lo, hi]
  bool Contains(double v) const { return (lo_open ? v > lo : v >= lo) && v <= hi; }
  // Integer bounds (hi: 2^63 as a double stands for INT64_MAX).
  int64_t IntLo() const { return static_cast<int64_t>(lo); }
  int64_t IntHi() const;
};

struct DecoderSetting {
  enum class Kind { Int, Number, Text };
  enum class Form { Custom, Table };
  std::string_view name;  // experiment key, params field, DecoderOptions member
  std::string_view flag;  // the command line's spelling ("--k,--draft-max")
  Kind kind = Kind::Text;
  SettingRange range;  // Int and Number: the accepted values, everywhere
  bool speculative_only = false;
  std::string_view group;  // the experiment files' map it is written in ("sampling"), or none
  Form form = Form::Custom;
  std::string_view help;
  // Table form: reads the text form into `o` (throws Error("<what>: ...")), and writes it.
  void (*parse)(DecoderOptions& o, std::string_view text, std::string_view what) = nullptr;
  std::string (*text)(const DecoderOptions& o) = nullptr;

  // "<what>: V is out of range [lo, hi]" unless the range holds v (the files' and the
  // command line's message).
  void CheckRange(double v, std::string_view what) const;
};

// Builds a table entry: SettingDef("k", "--k,--draft-max").Int(1, 64).Speculative().Help("...").
struct SettingDef {
  DecoderSetting s;
  explicit SettingDef(std::string_view name, std::string_view flag = "") { s.name = name, s.flag = flag; }
  SettingDef& Int(double lo, double hi) { return Range(DecoderSetting::Kind::Int, {lo, hi}); }
  SettingDef& Number(double lo, double hi, bool lo_open = false) {
    return Range(DecoderSetting::Kind::Number, {lo, hi, lo_open});
  }
  SettingDef& Range(DecoderSetting::Kind k, SettingRange r) { return s.kind = k, s.range = r, *this; }
  SettingDef& Speculative() { return s.speculative_only = true, *this; }
  SettingDef& Group(std::string_view g) { return s.group = g, *this; }
  SettingDef& Help(std::string_view h) { return s.help = h, *this; }
  // The table form, with its text parser and writer.
  SettingDef& Table(void (*parse)(DecoderOptions&, std::string_view, std::string_view),
                    std::string (*text)(const DecoderOptions&)) {
    return s.form = DecoderSetting::Form::Table, s.parse = parse, s.text = text, *this;
  }
  operator DecoderSetting() const { return s; }
};

// Every decoder setting, in the order of DecoderOptions.
const std::vector<DecoderSetting>& DecoderSettings();
// The entry named `name` (a programming error if none: throws).
const DecoderSetting& Setting(std::string_view name);

}  // namespace specsweep
