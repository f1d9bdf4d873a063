module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x8xf32>, %arg1: tensor<8xf32>, %arg2: tensor<8x2xf32>, %arg3: tensor<2xf32>, %arg4: tensor<6x4xf32>, %arg5: tensor<6x2xf32>) -> (tensor<f32> {jax.result_info = "result[0]"}, tensor<4x8xf32> {jax.result_info = "result[1]"}, tensor<8xf32> {jax.result_info = "result[2]"}, tensor<8x2xf32> {jax.result_info = "result[3]"}, tensor<2xf32> {jax.result_info = "result[4]"}) {
    %0 = stablehlo.dot_general %arg4, %arg0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<6x4xf32>, tensor<4x8xf32>) -> tensor<6x8xf32>
    %1 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<8xf32>) -> tensor<1x8xf32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0, 1] : (tensor<1x8xf32>) -> tensor<6x8xf32>
    %3 = stablehlo.add %0, %2 : tensor<6x8xf32>
    %4 = stablehlo.tanh %3 : tensor<6x8xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<6x8xf32>
    %6 = stablehlo.subtract %5, %4 : tensor<6x8xf32>
    %7 = stablehlo.dot_general %4, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<6x8xf32>, tensor<8x2xf32>) -> tensor<6x2xf32>
    %8 = stablehlo.broadcast_in_dim %arg3, dims = [1] : (tensor<2xf32>) -> tensor<1x2xf32>
    %9 = stablehlo.broadcast_in_dim %8, dims = [0, 1] : (tensor<1x2xf32>) -> tensor<6x2xf32>
    %10 = stablehlo.add %7, %9 : tensor<6x2xf32>
    %11 = stablehlo.subtract %10, %arg5 : tensor<6x2xf32>
    %12 = stablehlo.multiply %11, %11 : tensor<6x2xf32>
    %cst_0 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %13 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<6x2xf32>
    %14 = stablehlo.multiply %13, %11 : tensor<6x2xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %15 = stablehlo.reduce(%12 init: %cst_1) applies stablehlo.add across dimensions = [0, 1] : (tensor<6x2xf32>, tensor<f32>) -> tensor<f32>
    %cst_2 = stablehlo.constant dense<1.200000e+01> : tensor<f32>
    %16 = stablehlo.divide %15, %cst_2 : tensor<f32>
    %cst_3 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %cst_4 = stablehlo.constant dense<1.200000e+01> : tensor<f32>
    %17 = stablehlo.divide %cst_3, %cst_4 : tensor<f32>
    %18 = stablehlo.broadcast_in_dim %17, dims = [] : (tensor<f32>) -> tensor<6x2xf32>
    %19 = stablehlo.multiply %18, %14 : tensor<6x2xf32>
    %cst_5 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %20 = stablehlo.reduce(%19 init: %cst_5) applies stablehlo.add across dimensions = [0] : (tensor<6x2xf32>, tensor<f32>) -> tensor<2xf32>
    %21 = stablehlo.reshape %20 : (tensor<2xf32>) -> tensor<1x2xf32>
    %cst_6 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %22 = stablehlo.reduce(%21 init: %cst_6) applies stablehlo.add across dimensions = [0] : (tensor<1x2xf32>, tensor<f32>) -> tensor<2xf32>
    %23 = stablehlo.dot_general %19, %4, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<6x2xf32>, tensor<6x8xf32>) -> tensor<2x8xf32>
    %24 = stablehlo.transpose %23, dims = [1, 0] : (tensor<2x8xf32>) -> tensor<8x2xf32>
    %25 = stablehlo.dot_general %19, %arg2, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<6x2xf32>, tensor<8x2xf32>) -> tensor<6x8xf32>
    %26 = stablehlo.multiply %25, %6 : tensor<6x8xf32>
    %27 = stablehlo.multiply %26, %4 : tensor<6x8xf32>
    %28 = stablehlo.add %26, %27 : tensor<6x8xf32>
    %cst_7 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %29 = stablehlo.reduce(%28 init: %cst_7) applies stablehlo.add across dimensions = [0] : (tensor<6x8xf32>, tensor<f32>) -> tensor<8xf32>
    %30 = stablehlo.reshape %29 : (tensor<8xf32>) -> tensor<1x8xf32>
    %cst_8 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %31 = stablehlo.reduce(%30 init: %cst_8) applies stablehlo.add across dimensions = [0] : (tensor<1x8xf32>, tensor<f32>) -> tensor<8xf32>
    %32 = stablehlo.dot_general %28, %arg4, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<6x8xf32>, tensor<6x4xf32>) -> tensor<8x4xf32>
    %33 = stablehlo.transpose %32, dims = [1, 0] : (tensor<8x4xf32>) -> tensor<4x8xf32>
    %cst_9 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %34 = stablehlo.broadcast_in_dim %cst_9, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
    %35 = stablehlo.multiply %34, %33 : tensor<4x8xf32>
    %36 = stablehlo.subtract %arg0, %35 : tensor<4x8xf32>
    %cst_10 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %37 = stablehlo.broadcast_in_dim %cst_10, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %38 = stablehlo.multiply %37, %31 : tensor<8xf32>
    %39 = stablehlo.subtract %arg1, %38 : tensor<8xf32>
    %cst_11 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %40 = stablehlo.broadcast_in_dim %cst_11, dims = [] : (tensor<f32>) -> tensor<8x2xf32>
    %41 = stablehlo.multiply %40, %24 : tensor<8x2xf32>
    %42 = stablehlo.subtract %arg2, %41 : tensor<8x2xf32>
    %cst_12 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %43 = stablehlo.broadcast_in_dim %cst_12, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %44 = stablehlo.multiply %43, %22 : tensor<2xf32>
    %45 = stablehlo.subtract %arg3, %44 : tensor<2xf32>
    return %16, %36, %39, %42, %45 : tensor<f32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8x2xf32>, tensor<2xf32>
  }
}
