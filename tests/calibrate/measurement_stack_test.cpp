// The training stack in measurement files (issue 11): files written before the stack was a
// column are lorasim's runner; an hf-peft row takes PEFT's and Trainer's defaults for what it
// leaves out; an option the stack does not have is refused at its row and column; and the
// writer's file reads back to the same stack.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "calibrate/measurement_io.h"
#include "calibrate/measurement_label.h"
#include "model/error.h"
#include "tests/calibrate/parse_error.h"

namespace lorasim::calib {
namespace {

namespace fs = std::filesystem;
using model::AllocatorMode;
using model::AttnImpl;
using model::StackKind;

const std::string kHeader = "model,seq_len,micro_batch,step_time_s";

Measurement one(const std::string& text, const std::string& format) {
  const auto rows = parse_measurements(text, format, format == "csv" ? "m.csv" : "m.jsonl");
  EXPECT_EQ(rows.size(), 1u);
  return rows.at(0);
}

void expect_runner(const model::StackSpec& s) {
  EXPECT_EQ(s.kind, StackKind::lorasim);
  EXPECT_EQ(s.attn_impl, AttnImpl::sdpa);
  EXPECT_EQ(s.lora_dropout, 0.0);
  EXPECT_EQ(s.allocator, AllocatorMode::expandable);
  EXPECT_FALSE(s.autocast);
}

TEST(MeasurementStackTest, AFileWithoutAStackColumnIsLorasimsRunner) {
  expect_runner(one(kHeader + "\ntiny,128,2,0.5\n", "csv").workload.stack);
  expect_runner(one(R"({"model": "tiny", "seq_len": 128, "micro_batch": 2, "step_time_s": 0.5})", "jsonl").workload.stack);
  EXPECT_EQ(one(kHeader + "\ntiny,128,2,0.5\n", "csv").loop, "");
}

TEST(MeasurementStackTest, AnHfPeftRowTakesTheStacksDefaultsForWhatItLeavesOut) {
  const model::StackSpec s = one(kHeader + ",stack\ntiny,128,2,0.5,hf-peft\n", "csv").workload.stack;
  EXPECT_EQ(s.kind, StackKind::hf_peft);
  EXPECT_EQ(s.attn_impl, AttnImpl::sdpa);
  EXPECT_EQ(s.lora_dropout, 0.0);
  EXPECT_EQ(s.allocator, AllocatorMode::default_segments);
  EXPECT_TRUE(s.autocast);
  // An empty cell is a value left out, as the python writer leaves them.
  EXPECT_TRUE(one(kHeader + ",stack,autocast,allocator\ntiny,128,2,0.5,hf-peft,,\n", "csv").workload.stack.autocast);
}

TEST(MeasurementStackTest, ReadsEveryStackColumn) {
  const Measurement m = one(R"({"model": "tiny", "seq_len": 128, "micro_batch": 2, "step_time_s": 0.5, )"
                            R"("stack": "hf-peft", "attn_impl": "eager", "lora_dropout": 0.05, )"
                            R"("allocator": "expandable", "autocast": false, "loop": "plain"})",
                            "jsonl");
  EXPECT_EQ(m.workload.stack.kind, StackKind::hf_peft);
  EXPECT_EQ(m.workload.stack.attn_impl, AttnImpl::eager);
  EXPECT_EQ(m.workload.stack.lora_dropout, 0.05);
  EXPECT_EQ(m.workload.stack.allocator, AllocatorMode::expandable);
  EXPECT_FALSE(m.workload.stack.autocast);
  EXPECT_EQ(m.loop, "plain");
  // A lorasim row may say which allocator ran (PYTORCH_CUDA_ALLOC_CONF is the user's).
  EXPECT_EQ(one(kHeader + ",stack,allocator\ntiny,128,2,0.5,lorasim,default\n", "csv").workload.stack.allocator,
            AllocatorMode::default_segments);
}

TEST(MeasurementStackTest, BadValuesAreRefusedAtTheirRowAndColumn) {
  EXPECT_EQ(parse_error(kHeader + ",stack\ntiny,128,2,0.5,hf-peft\ntiny,128,2,0.5,trl\n", "csv"),
            "m.csv:3: column stack: unknown stack 'trl': allowed are hf-peft (Transformers/TRL + PEFT), lorasim and "
            "lightning (PyTorch Lightning + Transformers + PEFT)");
  EXPECT_EQ(parse_error(kHeader + ",stack,attn_impl\ntiny,128,2,0.5,hf-peft,flash\n", "csv"),
            "m.csv:2: column attn_impl: unknown attention implementation 'flash': allowed are sdpa, eager, "
            "flash_attention_2");
  EXPECT_EQ(parse_error(kHeader + ",stack,lora_dropout\ntiny,128,2,0.5,hf-peft,1\n", "csv"),
            "m.csv:2: column lora_dropout: LoRA dropout must be in [0, 1), got 1.000000");
  EXPECT_EQ(parse_error(kHeader + ",stack,lora_dropout\ntiny,128,2,0.5,hf-peft,much\n", "csv"),
            "m.csv:2: column lora_dropout: expected a number, got 'much'");
  EXPECT_EQ(parse_error(kHeader + ",stack,allocator\ntiny,128,2,0.5,hf-peft,cudaMalloc\n", "csv"),
            "m.csv:2: column allocator: unknown allocator 'cudaMalloc': allowed are default and expandable "
            "(PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True)");
  EXPECT_EQ(parse_error(kHeader + ",stack,autocast\ntiny,128,2,0.5,hf-peft,maybe\n", "csv"),
            "m.csv:2: column autocast: expected true or false, got 'maybe'");
  EXPECT_EQ(parse_error(kHeader + ",loop\ntiny,128,2,0.5,sft\n", "csv"),
            "m.csv:2: column loop: expected trainer, plain or probe, got 'sft'");
}

TEST(MeasurementStackTest, AnOptionTheStackDoesNotHaveIsRefusedNamingItsColumn) {
  EXPECT_EQ(parse_error(kHeader + ",stack,lora_dropout\ntiny,128,2,0.5,lorasim,0.05\n", "csv"),
            "m.csv:2: column lora_dropout: the lorasim stack has no LoRA dropout: the hf-peft stack models "
            "dropout");
  // Without a stack column the row is the runner's, which is easy to forget in a hand-written file.
  EXPECT_EQ(parse_error(R"({"model": "tiny", "seq_len": 128, "micro_batch": 2, "step_time_s": 0.5, "autocast": true})",
                        "jsonl"),
            "m.jsonl:1: column autocast: the lorasim stack runs without autocast: the hf-peft stack models "
            "autocast (a row without a stack column is lorasim's runner: add stack hf-peft)");
  EXPECT_NE(parse_error(kHeader + ",stack,attn_impl\ntiny,128,2,0.5,lorasim,eager\n", "csv").find(
                "m.csv:2: column attn_impl: the lorasim stack has one attention implementation"),
            std::string::npos);
}

struct TempDir {
  fs::path path;
  TempDir() {
    std::string p = (fs::path(::testing::TempDir()) / "lorasim-stack-XXXXXX").string();
    if (::mkdtemp(p.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path = p;
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

TEST(MeasurementStackTest, TheWriterAppendsTheStackColumnsAndReadsThemBack) {
  TempDir dir;
  std::vector<Measurement> rows = parse_measurements(
      kHeader + ",stack,attn_impl,lora_dropout,allocator,autocast,loop,fused_lm_head\n"
                "tiny,128,2,0.5,hf-peft,flash_attention_2,0.05,expandable,false,trainer,true\n"
                "tiny,128,4,0.7,hf-peft,,,,,,\n"
                "tiny,128,8,0.9,lorasim,,,,,,\n",
      "csv", "m.csv");
  write_measurements_csv(rows, dir / "runs.csv");
  std::ifstream in(dir / "runs.csv");
  std::string header;
  std::getline(in, header);
  const std::string tail = ",stack,attn_impl,lora_dropout,allocator,autocast,loop,fused_lm_head,device,"
                           "device_memory_bytes,processes,collation,padded_lengths,real_tokens,new_shapes_per_step,"
                           "model_config_sha256,quant,double_quant,kbit_prepare,optim,adapter_dtype";
  ASSERT_GE(header.size(), tail.size());
  EXPECT_EQ(header.substr(header.size() - tail.size()), tail);
  std::string first;
  std::getline(in, first);
  const std::string cells = ",hf-peft,flash_attention_2,0.05,expandable,false,trainer,true,,,1,,,,,,none,true,false,adamw_torch_fused,fp32";
  ASSERT_GE(first.size(), cells.size());
  EXPECT_EQ(first.substr(first.size() - cells.size()), cells);
  const auto back = load_measurements(dir / "runs.csv");
  ASSERT_EQ(back.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const model::StackSpec &a = rows[i].workload.stack, &b = back[i].workload.stack;
    EXPECT_EQ(a.kind, b.kind) << i;
    EXPECT_EQ(a.attn_impl, b.attn_impl) << i;
    EXPECT_EQ(a.lora_dropout, b.lora_dropout) << i;
    EXPECT_EQ(a.allocator, b.allocator) << i;
    EXPECT_EQ(a.autocast, b.autocast) << i;
    EXPECT_EQ(a.fused_lm_head, b.fused_lm_head) << i;
    EXPECT_EQ(rows[i].loop, back[i].loop) << i;
  }
  EXPECT_EQ(back[0].workload.stack.lora_dropout, 0.05);
  EXPECT_TRUE(back[1].workload.stack.autocast);
  expect_runner(back[2].workload.stack);
}

TEST(MeasurementStackTest, RowsOfAnotherStackFormAnotherGroup) {
  const auto rows = parse_measurements(kHeader + ",stack,lora_dropout,allocator\n"
                                                 "tiny,64,8,0.5,lorasim,,\n"
                                                 "tiny,64,8,0.5,hf-peft,,\n"
                                                 "tiny,64,8,0.5,hf-peft,0.05,expandable\n",
                                       "csv", "m.csv");
  EXPECT_EQ(workload_label(rows[0]), "tiny L=2 s=64 r=16 q,k,v,o,gate,up,down bf16 B=8 lorasim");
  EXPECT_EQ(workload_label(rows[1]), "tiny L=2 s=64 r=16 q,k,v,o,gate,up,down bf16 B=8 hf-peft");
  EXPECT_EQ(workload_label(rows[2]),
            "tiny L=2 s=64 r=16 q,k,v,o,gate,up,down bf16 B=8 hf-peft dropout=0.05 expandable-alloc");
}

// Issue 18: a QLoRA row names its base, double quantization, preparation and optimizer; rows
// without the columns are a float base under Trainer's default AdamW (fused).
TEST(MeasurementStackTest, QuantColumnsReadAndWriteBack) {
  const std::string head = "model,seq_len,micro_batch,step_time_s,grad_ckpt,stack,quant,double_quant,kbit_prepare,optim\n";
  const auto rows = parse_measurements(head + "tiny,64,2,0.5,true,hf-peft,nf4,true,true,paged_adamw_8bit\n", "csv", "m.csv");
  ASSERT_EQ(rows.size(), 1u);
  const model::TrainingSpec& t = rows[0].workload.train;
  EXPECT_EQ(t.weight_storage(), model::WeightFormat::nf4);
  EXPECT_TRUE(t.double_quant && t.kbit_prepared());
  EXPECT_EQ(t.optimizer, model::Optimizer::paged_adamw_8bit);
  const auto plain = parse_measurements("model,seq_len,micro_batch,step_time_s\ntiny,64,2,0.5\n", "csv", "m.csv");
  EXPECT_FALSE(plain[0].workload.train.quantized());
  EXPECT_EQ(plain[0].workload.train.optimizer, model::Optimizer::adamw_torch_fused);  // Transformers 5's default
  // Bad cells say their column; a prepared base without checkpointing contradicts itself.
  EXPECT_THROW(parse_measurements(head + "tiny,64,2,0.5,true,hf-peft,int4,true,true,adamw_torch\n", "csv", "m.csv"),
               ConfigError);
  EXPECT_THROW(parse_measurements(head + "tiny,64,2,0.5,false,hf-peft,nf4,true,true,adamw_torch\n", "csv", "m.csv"),
               ConfigError);
  EXPECT_THROW(parse_measurements(head + "tiny,64,2,0.5,true,hf-peft,nf4,true,true,sgd\n", "csv", "m.csv"), ConfigError);
  const fs::path dir = fs::temp_directory_path() / "lorasim-quant-rows";
  fs::create_directories(dir);
  write_measurements_csv(rows, dir / "runs.csv");
  const auto back = load_measurements(dir / "runs.csv");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].workload.train.weight_storage(), model::WeightFormat::nf4);
  EXPECT_EQ(back[0].workload.train.optimizer, model::Optimizer::paged_adamw_8bit);
  fs::remove_all(dir);
}

}  // namespace
// TRL's SFTTrainer on a quantized base keeps the adapters in the compute dtype: the row says so
// in adapter_dtype, which is read, written back and priced (8 bytes less per adapter parameter).
TEST(MeasurementStackTest, AdapterDtypeReadsAndWritesBack) {
  const std::string head = "model,seq_len,micro_batch,step_time_s,grad_ckpt,stack,quant,kbit_prepare,adapter_dtype\n";
  const auto rows = parse_measurements(head + "tiny,64,2,0.5,true,hf-peft,nf4,false,bf16\n" +
                                           "tiny,64,4,0.5,true,hf-peft,nf4,false,fp32\n",
                                       "csv", "m.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(rows[0].workload.train.adapters_in_compute_precision);
  EXPECT_FALSE(rows[1].workload.train.adapters_in_compute_precision);
  EXPECT_EQ(rows[0].workload.train.adapter_element_bytes(), 2);
  EXPECT_THROW(parse_measurements(head + "tiny,64,2,0.5,true,hf-peft,nf4,false,int8\n", "csv", "m.csv"), ConfigError);
  const fs::path dir = fs::temp_directory_path() / "lorasim-adapter-dtype-rows";
  fs::create_directories(dir);
  write_measurements_csv(rows, dir / "runs.csv");
  const auto back = load_measurements(dir / "runs.csv");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_TRUE(back[0].workload.train.adapters_in_compute_precision);
  EXPECT_FALSE(back[1].workload.train.adapters_in_compute_precision);
  fs::remove_all(dir);
}

}  // namespace lorasim::calib
