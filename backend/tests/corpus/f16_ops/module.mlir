module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x6xf16>, %arg1: tensor<4x6xf16>) -> (tensor<4x6xf16> {jax.result_info = "result[0]"}, tensor<4x4xf16> {jax.result_info = "result[1]"}, tensor<4xf16> {jax.result_info = "result[2]"}) {
    %cst = stablehlo.constant dense<5.000000e-01> : tensor<f16>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f16>) -> tensor<4x6xf16>
    %1 = stablehlo.multiply %arg0, %0 : tensor<4x6xf16>
    %2 = stablehlo.exponential %1 : tensor<4x6xf16>
    %3 = stablehlo.multiply %arg1, %arg1 : tensor<4x6xf16>
    %4 = stablehlo.subtract %2, %3 : tensor<4x6xf16>
    %5 = stablehlo.tanh %4 : tensor<4x6xf16>
    %6 = stablehlo.abs %arg1 : tensor<4x6xf16>
    %7 = stablehlo.sqrt %6 : tensor<4x6xf16>
    %8 = stablehlo.add %5, %7 : tensor<4x6xf16>
    %9 = stablehlo.transpose %arg1, dims = [1, 0] : (tensor<4x6xf16>) -> tensor<6x4xf16>
    %10 = stablehlo.dot_general %arg0, %9, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x6xf16>, tensor<6x4xf16>) -> tensor<4x4xf16>
    %cst_0 = stablehlo.constant dense<0xFC00> : tensor<f16>
    %11 = stablehlo.reduce(%4 init: %cst_0) applies stablehlo.maximum across dimensions = [1] : (tensor<4x6xf16>, tensor<f16>) -> tensor<4xf16>
    return %8, %10, %11 : tensor<4x6xf16>, tensor<4x4xf16>, tensor<4xf16>
  }
}
