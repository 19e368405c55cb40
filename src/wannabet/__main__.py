from wannabet.cli import main

main()
