module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<6xf32>) -> (tensor<6xf32> {jax.result_info = "result[0]"}, tensor<i32> {jax.result_info = "result[1]"}) {
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<6xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %2:4 = stablehlo.while(%iterArg = %arg0, %iterArg_0 = %arg0, %iterArg_1 = %1, %iterArg_2 = %c) : tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<i32>
    cond {
      %3 = stablehlo.multiply %iterArg_1, %iterArg_1 : tensor<6xf32>
      %4 = stablehlo.subtract %3, %iterArg : tensor<6xf32>
      %5 = stablehlo.abs %4 : tensor<6xf32>
      %cst_3 = stablehlo.constant dense<0xFF800000> : tensor<f32>
      %6 = stablehlo.reduce(%5 init: %cst_3) applies stablehlo.maximum across dimensions = [0] : (tensor<6xf32>, tensor<f32>) -> tensor<f32>
      %cst_4 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
      %7 = stablehlo.compare GT, %6, %cst_4, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %c_5 = stablehlo.constant dense<50> : tensor<i32>
      %8 = stablehlo.compare LT, %iterArg_2, %c_5, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %9 = stablehlo.and %7, %8 : tensor<i1>
      stablehlo.return %9 : tensor<i1>
    } do {
      %3 = stablehlo.divide %iterArg_0, %iterArg_1 : tensor<6xf32>
      %4 = stablehlo.add %iterArg_1, %3 : tensor<6xf32>
      %cst_3 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
      %5 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<6xf32>
      %6 = stablehlo.multiply %5, %4 : tensor<6xf32>
      %c_4 = stablehlo.constant dense<1> : tensor<i32>
      %7 = stablehlo.add %iterArg_2, %c_4 : tensor<i32>
      stablehlo.return %iterArg, %iterArg_0, %6, %7 : tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<i32>
    }
    return %2#2, %2#3 : tensor<6xf32>, tensor<i32>
  }
}
